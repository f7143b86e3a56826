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
