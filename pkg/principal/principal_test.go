package principal

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestHeadersRoundTripAndStrip(t *testing.T) {
	p := Principal{WorkspaceID: "ws", UserID: "sa_1", Email: "a@b", Name: "bot", KeyID: "key_1", Permissions: []string{"convai_read", "webhooks_write"}}
	h := http.Header{}
	p.SetHeaders(h)
	got, ok := FromHeaders(h)
	if !ok || got.WorkspaceID != "ws" || got.Name != "bot" || len(got.Permissions) != 2 || !got.Has("webhooks_write") {
		t.Fatalf("round trip: %+v %v", got, ok)
	}
	h.Set("X-Other", "kept")
	h.Set("voiceai-workspace-id", "spoofed") // any case
	StripInternalHeaders(h)
	if _, ok := FromHeaders(h); ok || h.Get("X-Other") != "kept" {
		t.Fatalf("strip left %v", h)
	}
}

func TestPermissions(t *testing.T) {
	all := Principal{Permissions: []string{PermissionAll}}
	if !all.Has("convai_write") || !all.IsAdmin() {
		t.Fatal("all grants everything")
	}
	ro := Principal{Permissions: []string{"convai_read"}}
	if ro.Has("convai_write") || !ro.HasAny("convai_write", "convai_read") || ro.IsAdmin() {
		t.Fatal("read-only key")
	}
}

func TestMiddlewareRefusesRequestsWithoutCaller(t *testing.T) {
	h := Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := Require(r, "convai_write"); err != nil {
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
		Principal{WorkspaceID: "ws", UserID: "u", Permissions: []string{perms}}.SetHeaders(r.Header)
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != want {
			t.Fatalf("%s: %d, want %d", perms, rec.Code, want)
		}
	}
}
