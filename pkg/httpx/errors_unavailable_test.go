package httpx

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
)

type storeDown struct{}

func (storeDown) Error() string     { return "no response from stream" }
func (storeDown) Unavailable() bool { return true }

func TestWriteErrorAnswersAnOutage503WithRetryAfter(t *testing.T) {
	w, r := httptest.NewRecorder(), httptest.NewRequest("POST", "/x", nil)
	WriteError(w, r, fmt.Errorf("append: %w", storeDown{}))
	if w.Code != 503 || w.Header().Get("Retry-After") != "1" || !strings.Contains(w.Body.String(), `"status":"service_unavailable"`) {
		t.Fatalf("got %d Retry-After %q %s", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	w = httptest.NewRecorder()
	WriteError(w, r, errors.New("boom"))
	if w.Code != 500 || w.Header().Get("Retry-After") != "" {
		t.Fatalf("an ordinary failure: %d %q", w.Code, w.Header().Get("Retry-After"))
	}
}

// A read model's store that did not answer (as the check its client's
// maker registered says) is an outage too: 503 with Retry-After, not a 500.
func TestWriteErrorAnswersARegisteredStoreOutage503(t *testing.T) {
	selection := errors.New("server selection error: connection refused")
	AnswerUnavailable(func(err error) bool { return errors.Is(err, selection) })
	t.Cleanup(func() { storeUnavailable.Store(nil) })
	w, r := httptest.NewRecorder(), httptest.NewRequest("GET", "/x", nil)
	WriteError(w, r, fmt.Errorf("list tickets: %w", selection))
	if w.Code != 503 || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("got %d Retry-After %q %s", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	w = httptest.NewRecorder()
	WriteError(w, r, errors.New("boom"))
	if w.Code != 500 {
		t.Fatalf("an ordinary failure: %d", w.Code)
	}
}
