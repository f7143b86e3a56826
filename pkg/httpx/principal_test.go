package httpx

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/principal"
)

func TestWithPrincipalRefusesRequestsWithoutCaller(t *testing.T) {
	h := WithPrincipal(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := principal.Require(r, "convai_write"); err != nil {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != http.StatusUnauthorized {
		t.Fatalf("no caller: %d", rec.Code)
	}
	for perms, want := range map[string]int{"convai_read": 403, "convai_write": 204} {
		r := httptest.NewRequest("GET", "/", nil)
		principal.Principal{WorkspaceID: "ws", UserID: "u", Permissions: []string{perms}}.SetHeaders(r.Header)
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != want {
			t.Fatalf("%s: %d, want %d", perms, rec.Code, want)
		}
	}
}
