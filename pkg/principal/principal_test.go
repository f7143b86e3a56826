package principal

import (
	"net/http"
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
