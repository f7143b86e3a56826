package outbound

import (
	"strings"
	"testing"
)

// An allow-list entry that could never match a host is refused at start,
// by name; host names and IP addresses are taken.
func TestAnAllowListEntryMustBeAHost(t *testing.T) {
	for _, ok := range []string{"", "127.0.0.1", "receiver.internal, hooks.example.com", "::1,[fd00::1]", "localhost."} {
		if err := (Env{AllowHosts: ok}).Validate(); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"bad host!", "https://receiver.internal", "receiver.internal:8080", "host/path"} {
		if err := (Env{LegacyAllowHosts: bad}).Validate(); err == nil || !strings.Contains(err.Error(), "VOICEAI_WEBHOOK_ALLOW_HOSTS") {
			t.Errorf("%q: %v, want refused by name", bad, err)
		}
	}
}
