package ratelimit

import (
	"net/http"
	"strconv"
	"time"
)

// Names of the rate-limit headers, canonical once (http.Header.Set would
// canonicalize them on every request).
var (
	headerLimit     = http.CanonicalHeaderKey("X-RateLimit-Limit")
	headerRemaining = http.CanonicalHeaderKey("X-RateLimit-Remaining")
	headerReset     = http.CanonicalHeaderKey("X-RateLimit-Reset")
	headerPolicy    = http.CanonicalHeaderKey("RateLimit-Policy")
	headerRateLimit = http.CanonicalHeaderKey("RateLimit")
)

// SetHeaders writes the rate-limit headers every authenticated response
// carries: X-RateLimit-* (spec section 8) for the window nearest
// exhaustion, and the IETF RateLimit-Policy / RateLimit fields
// (draft-ietf-httpapi-ratelimit-headers) for both windows. It is on every
// request's path, so its five values are cut from one string and share
// one slice: two allocations, where formatting each took seventeen.
func SetHeaders(h http.Header, d Decision, now time.Time) {
	n := d.Nearest()
	var buf [192]byte
	var ends [5]int
	b := strconv.AppendInt(buf[:0], n.Limit, 10)
	ends[0] = len(b)
	b = strconv.AppendInt(b, n.Remaining, 10)
	ends[1] = len(b)
	b = strconv.AppendInt(b, n.Reset.Unix(), 10)
	ends[2] = len(b)
	b = appendWindows(b, ";q=", ";w=", [2]int64{d.Minute.Limit, d.Minute.Seconds}, [2]int64{d.Hour.Limit, d.Hour.Seconds})
	ends[3] = len(b)
	b = appendWindows(b, ";r=", ";t=", [2]int64{d.Minute.Remaining, secondsUntil(now, d.Minute.Reset)},
		[2]int64{d.Hour.Remaining, secondsUntil(now, d.Hour.Reset)})
	ends[4] = len(b)
	all := string(b)
	values := make([]string, len(ends))
	start := 0
	for i, name := range [...]string{headerLimit, headerRemaining, headerReset, headerPolicy, headerRateLimit} {
		values[i] = all[start:ends[i]]
		h[name] = values[i : i+1 : i+1]
		start = ends[i]
	}
}

// appendWindows appends `"minute";<p>m0<q>m1, "hour";<p>h0<q>h1`, the
// shape of both IETF fields (p, q: ";q=", ";w=" or ";r=", ";t=").
func appendWindows(b []byte, p, q string, minute, hour [2]int64) []byte {
	b = appendWindow(append(b, `"minute"`...), p, q, minute)
	return appendWindow(append(b, `, "hour"`...), p, q, hour)
}

func appendWindow(b []byte, p, q string, v [2]int64) []byte {
	b = strconv.AppendInt(append(b, p...), v[0], 10)
	return strconv.AppendInt(append(b, q...), v[1], 10)
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
