package docstore

import (
	"strings"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

// A store started at a fixed address answers there again after a
// restart: the URI the services were given stays good.
func TestAStoreAtAnAddressKeepsItsURIAcrossRestarts(t *testing.T) {
	dir, addr := t.TempDir(), testkit.FreeAddr(t)
	var uris []string
	for range 2 {
		m, err := StartAt(dir, addr)
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, m.URI)
		m.Close()
	}
	if uris[0] != uris[1] || !strings.Contains(uris[0], addr) {
		t.Fatalf("URIs %v, want both at %s", uris, addr)
	}
}
