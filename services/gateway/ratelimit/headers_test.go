package ratelimit

import (
	"net/http"
	"testing"
	"time"
)

func TestSetHeadersWritesBothWindowsInFewAllocations(t *testing.T) {
	now := time.Date(2026, 1, 1, 10, 59, 50, 0, time.UTC)
	d := Decision{Allowed: true,
		Minute: Window{Name: "minute", Limit: 100, Remaining: 57, Reset: now.Add(10 * time.Second), Seconds: 60},
		Hour:   Window{Name: "hour", Limit: 1 << 40, Remaining: 1<<40 - 43, Reset: now.Add(10 * time.Second), Seconds: 3600},
	}
	h := http.Header{"X-Ratelimit-Limit": {"stale"}}
	SetHeaders(h, d, now)
	want := map[string]string{
		"X-RateLimit-Limit":     "100",
		"X-RateLimit-Remaining": "57",
		"X-RateLimit-Reset":     "1767265200",
		"RateLimit-Policy":      `"minute";q=100;w=60, "hour";q=1099511627776;w=3600`,
		"RateLimit":             `"minute";r=57;t=10, "hour";r=1099511627733;t=10`,
	}
	for name, v := range want {
		if got := h.Values(name); len(got) != 1 || got[0] != v {
			t.Errorf("%s: %q, want %q", name, got, v)
		}
	}
	// Every request pays for these headers: one string, one slice.
	if n := testing.AllocsPerRun(100, func() { SetHeaders(h, d, now) }); n > 2 {
		t.Errorf("SetHeaders allocates %.0f times, want at most 2", n)
	}
}
