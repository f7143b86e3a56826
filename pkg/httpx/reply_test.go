package httpx

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// NoContent answers 204 after a success and writes nothing after a
// failure, whose error the handler returns.
func TestNoContent(t *testing.T) {
	rec := httptest.NewRecorder()
	if err := NoContent(rec, nil); err != nil || rec.Code != http.StatusNoContent || rec.Body.Len() != 0 {
		t.Fatalf("success: %v %d %q", err, rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	failed := errors.New("conflict")
	if err := NoContent(rec, failed); err != failed || rec.Code != http.StatusOK || rec.Body.Len() != 0 { // 200: the recorder's, untouched
		t.Fatalf("a failure must write nothing and return its error: %v %d", err, rec.Code)
	}
}

func TestReply(t *testing.T) {
	double := func(n int) map[string]int { return map[string]int{"n": 2 * n} }
	rec := httptest.NewRecorder()
	if err := Reply(rec, http.StatusCreated, 21, nil, double); err != nil || rec.Code != http.StatusCreated || rec.Body.String() != "{\"n\":42}\n" {
		t.Fatalf("success: %v %d %q", err, rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	failed := errors.New("not found")
	viewed := false
	if err := Reply(rec, http.StatusOK, 0, failed, func(int) int { viewed = true; return 0 }); err != failed || viewed || rec.Body.Len() != 0 {
		t.Fatalf("a failure must neither view nor write, and return its error: %v viewed=%v %q", err, viewed, rec.Body)
	}
}

func TestCommand(t *testing.T) {
	type in struct {
		N int `json:"n"`
	}
	double := func(x in) (int, error) { return 2 * x.N, nil }
	view := func(n int) map[string]int { return map[string]int{"n": n} }
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/", strings.NewReader(`{"n":21}`))
	if err := Command(rec, req, http.StatusCreated, double, view); err != nil || rec.Code != http.StatusCreated || rec.Body.String() != "{\"n\":42}\n" {
		t.Fatalf("success: %v %d %q", err, rec.Code, rec.Body)
	}
	ran := false
	req = httptest.NewRequest("POST", "/", strings.NewReader(`{"n":"x"}`))
	if err := Command(httptest.NewRecorder(), req, http.StatusOK, func(in) (int, error) { ran = true; return 0, nil }, view); err == nil || ran {
		t.Fatalf("a body of the wrong type must be refused before the use case runs: %v ran=%v", err, ran)
	}
}
