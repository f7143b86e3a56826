package ratelimit

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// SetHeaders writes the rate-limit headers every authenticated response
// carries: X-RateLimit-* (spec section 8) for the window nearest
// exhaustion, and the IETF RateLimit-Policy / RateLimit fields
// (draft-ietf-httpapi-ratelimit-headers) for both windows.
func SetHeaders(h http.Header, d Decision, now time.Time) {
	n := d.Nearest()
	h.Set("X-RateLimit-Limit", strconv.FormatInt(n.Limit, 10))
	h.Set("X-RateLimit-Remaining", strconv.FormatInt(n.Remaining, 10))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(n.Reset.Unix(), 10))
	h.Set("RateLimit-Policy", fmt.Sprintf(`"minute";q=%d;w=%d, "hour";q=%d;w=%d`,
		d.Minute.Limit, d.Minute.Seconds, d.Hour.Limit, d.Hour.Seconds))
	h.Set("RateLimit", fmt.Sprintf(`"minute";r=%d;t=%d, "hour";r=%d;t=%d`,
		d.Minute.Remaining, secondsUntil(now, d.Minute.Reset), d.Hour.Remaining, secondsUntil(now, d.Hour.Reset)))
}

// secondsUntil rounds up, so a client waiting that long is past the reset.
func secondsUntil(now, t time.Time) int64 {
	d := t.Sub(now)
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// RetryAfterSeconds is the Retry-After value for a refused request.
func RetryAfterSeconds(d Decision, now time.Time) int64 {
	return max(secondsUntil(now, now.Add(d.RetryAfter(now))), 1)
}
