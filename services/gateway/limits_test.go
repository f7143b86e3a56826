package gateway

import (
	"testing"

	"github.com/voiceai-platform/voiceai/services/gateway/keycache"
	"github.com/voiceai-platform/voiceai/services/gateway/ratelimit"
)

// A key's own limits hold, within the operator's ceiling; a key without
// its own has the defaults; no ceiling leaves a key's own as they are.
func TestAKeysOwnLimitsHoldWithinTheCeiling(t *testing.T) {
	defaults, ceiling := ratelimit.Limits{PerMinute: 100, PerHour: 1000}, ratelimit.Limits{PerMinute: 6000, PerHour: 100_000}
	for _, c := range []struct {
		name    string
		key     keycache.Key
		ceiling ratelimit.Limits
		want    ratelimit.Limits
	}{
		{"none of its own", keycache.Key{}, ceiling, defaults},
		{"its own, under the ceiling", keycache.Key{PerMinute: 500, PerHour: 5000}, ceiling, ratelimit.Limits{PerMinute: 500, PerHour: 5000}},
		{"its own, over the ceiling", keycache.Key{PerMinute: 1_000_000, PerHour: 1_000_000}, ceiling, ceiling},
		{"no ceiling", keycache.Key{PerMinute: 1_000_000}, ratelimit.Limits{}, ratelimit.Limits{PerMinute: 1_000_000, PerHour: 1000}},
	} {
		if got := keyLimits(defaults, c.ceiling, c.key); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// A ceiling below the default it bounds is refused at start.
func TestACeilingBelowTheDefaultIsRefused(t *testing.T) {
	c := Config{HTTPAddr: "127.0.0.1:0", RateLimitPerMinute: 100, RateLimitPerHour: 1000, MaxBodyBytes: 1 << 20, UpstreamTimeout: 1, RateLimitMaxPerMinute: 50}
	if err := c.Validate(); err == nil {
		t.Fatal("a ceiling of 50 a minute under a default of 100 was taken")
	}
	c.RateLimitMaxPerMinute = 100
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}
