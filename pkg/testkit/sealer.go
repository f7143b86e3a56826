package testkit

import (
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/seal"
)

// Sealer seals secrets under a fixed key, for app tests that seal and
// open secrets without a service's configuration.
func Sealer(t testing.TB) *seal.Sealer {
	t.Helper()
	s, err := seal.New([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
