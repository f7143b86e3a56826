package principal

import (
	"net/http"
	"testing"
	"unsafe"
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

// A principal keeps copies of its header values, not parts of the
// header block they came in (over NATS, one string for every header of a
// request): a caller's id kept for long must not keep the request's
// headers alive.
func TestFromHeadersCopiesItsValues(t *testing.T) {
	block := "ws_1" + "u_1" + "k_1" + "convai_read,convai_write"
	h := http.Header{
		HeaderWorkspace: {block[0:4]}, HeaderUser: {block[4:7]}, HeaderKey: {block[7:10]}, HeaderPermissions: {block[10:]},
	}
	p, ok := FromHeaders(h)
	if !ok || p.WorkspaceID != "ws_1" || p.UserID != "u_1" || p.KeyID != "k_1" || len(p.Permissions) != 2 {
		t.Fatalf("read %+v, %v", p, ok)
	}
	start, end := uintptr(unsafe.Pointer(unsafe.StringData(block))), uintptr(unsafe.Pointer(unsafe.StringData(block)))+uintptr(len(block))
	for _, v := range append([]string{p.WorkspaceID, p.UserID, p.KeyID}, p.Permissions...) {
		if at := uintptr(unsafe.Pointer(unsafe.StringData(v))); at >= start && at < end {
			t.Fatalf("%q is a part of the header block", v)
		}
	}
}
