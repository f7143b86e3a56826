package stack

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/gateway/ratelimit"
)

// startLimited is a stack whose keys default to 50 requests a minute and
// 1,000 an hour, once at least 15 s remain of the current minute.
func startLimited(t *testing.T) *Stack {
	t.Helper()
	s := startAdmin(t, func(c *Config) { c.RateLimitPerMinute, c.RateLimitPerHour = 50, 1000 })
	testkit.WaitForFreshMinute(t, 15*time.Second)
	return s
}

func TestRateLimitHeadersAndRefusal(t *testing.T) {
	t.Parallel()
	s := startLimited(t)
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

// While the shared counters cannot answer (here their stream is sealed,
// so every increment is refused), the gateway serves on and limits each
// key by its own count; once they answer again it uses them again.
func TestRateLimitsHoldWhileTheSharedCountersAreDown(t *testing.T) {
	t.Parallel()
	s := startLimited(t)
	limited, _, _ := newKey(t, s, adminKey, `["convai_read"]`, `,"rate_limit_per_minute":2`)
	// One request counted in the shared counters: the local count, which
	// starts at nothing, then admits two more where the shared one would
	// admit one.
	if r := call(t, s, "GET", "/v1/convai/agents", limited, ""); r.Code != 200 || r.Header.Get("X-RateLimit-Remaining") != "1" {
		t.Fatalf("first request: %d remaining %q", r.Code, r.Header.Get("X-RateLimit-Remaining"))
	}
	js := testenv.JetStreamAt(t, s.NATSURL)
	ctx := context.Background()
	str, err := js.Stream(ctx, ratelimit.Stream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := str.CachedInfo().Config
	cfg.Sealed = true
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{200, 200, 429} {
		if r := call(t, s, "GET", "/v1/convai/agents", limited, ""); r.Code != want || r.Header.Get("X-RateLimit-Limit") != "2" {
			t.Fatalf("request %d with the counters down: %d %s (limit %q); want %d", i+1, r.Code, r.Body, r.Header.Get("X-RateLimit-Limit"), want)
		}
	}
	// The stream gone, the limiter makes it again and counts in it.
	if err := js.DeleteStream(ctx, ratelimit.Stream); err != nil {
		t.Fatal(err)
	}
	if r := call(t, s, "GET", "/v1/convai/agents", adminKey, ""); r.Code != 200 || r.Header.Get("X-RateLimit-Remaining") != "49" {
		t.Fatalf("shared counters back: %d remaining %q", r.Code, r.Header.Get("X-RateLimit-Remaining"))
	}
}
