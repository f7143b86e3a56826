package stack

import (
	"strconv"
	"testing"
	"time"
)

// waitForFreshMinute avoids a window boundary in the middle of a test.
func waitForFreshMinute(t *testing.T, need time.Duration) {
	t.Helper()
	if left := time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)); left < need {
		eventually(t, need+time.Second, "the next minute", func() bool {
			return time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)) > need
		})
	}
}

func TestRateLimitHeadersAndRefusal(t *testing.T) {
	s := start(t, t.TempDir(), func(c *Config) {
		c.BootstrapAdminKey = adminKey
		c.RateLimitPerMinute, c.RateLimitPerHour = 50, 1000
	})
	waitForFreshMinute(t, 15*time.Second)
	limited, acct, _ := newKey(t, s, adminKey, `["convai_read"]`, `,"rate_limit_per_minute":3`)

	// Every authenticated response carries the headers, errors included.
	for i, path := range []string{"/v1/convai/agents", "/v1/convai/agents/agent_missing", "/v1/service-accounts/" + acct + "/api-keys"} {
		r := call(t, s, "GET", path, limited, "")
		if r.Header.Get("X-RateLimit-Limit") != "3" || r.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(2-i) {
			t.Fatalf("request %d (%d): limit %q remaining %q", i, r.Code, r.Header.Get("X-RateLimit-Limit"), r.Header.Get("X-RateLimit-Remaining"))
		}
		reset, _ := strconv.ParseInt(r.Header.Get("X-RateLimit-Reset"), 10, 64)
		if d := time.Until(time.Unix(reset, 0)); d <= 0 || d > time.Minute {
			t.Fatalf("X-RateLimit-Reset %d is not within the current minute", reset)
		}
		if r.Header.Get("RateLimit-Policy") != `"minute";q=3;w=60, "hour";q=1000;w=3600` || r.Header.Get("RateLimit") == "" {
			t.Fatalf("IETF headers: %q / %q", r.Header.Get("RateLimit-Policy"), r.Header.Get("RateLimit"))
		}
	}
	r := call(t, s, "GET", "/v1/convai/agents", limited, "")
	wantError(t, r, 429, "rate_limit_exceeded")
	retry, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if err != nil || retry < 1 || retry > 60 || r.Header.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("429 headers: Retry-After %q remaining %q", r.Header.Get("Retry-After"), r.Header.Get("X-RateLimit-Remaining"))
	}
	// Another key is unaffected: limits are per key.
	if r := call(t, s, "GET", "/v1/convai/agents", adminKey, ""); r.Code != 200 || r.Header.Get("X-RateLimit-Limit") != "50" {
		t.Fatalf("other key: %d limit %q", r.Code, r.Header.Get("X-RateLimit-Limit"))
	}
}
