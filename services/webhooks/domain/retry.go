package domain

import (
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Defaults of retry_config (documented in README.md); its bounds are the
// API schema's (RetryConfig).
const (
	DefaultMaxRetries  = 5
	DefaultRetryDelay  = 5
	DefaultMaxDelay    = 300
	DefaultExponential = true
)

// MaxDelayMax is the longest max_delay (the schema's bound), and so the
// longest wait a Retry-After may ask for.
const MaxDelayMax = 86400

// DefaultRetryOnStatus are the statuses retried when retry_on_status is
// absent.
var DefaultRetryOnStatus = []int{408, 429, 500, 502, 503, 504}

// RetryPolicy is a validated retry_config.
type RetryPolicy struct {
	MaxRetries         int
	RetryDelay         int // seconds
	ExponentialBackoff bool
	MaxDelay           int // seconds
	RetryOnStatus      []int
}

// DefaultRetryPolicy is the policy of a webhook created without
// retry_config.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{
		MaxRetries: DefaultMaxRetries, RetryDelay: DefaultRetryDelay, ExponentialBackoff: DefaultExponential,
		MaxDelay: DefaultMaxDelay, RetryOnStatus: slices.Clone(DefaultRetryOnStatus),
	}
}

// Verdict is what the dispatcher does after an attempt.
type Verdict int

const (
	// Delivered: the receiver answered 2xx.
	Delivered Verdict = iota
	// Retry: schedule another attempt after the delay.
	Retry
	// GiveUp: a final failure; no further attempt.
	GiveUp
	// Gone: the receiver answered 410; the webhook is disabled.
	Gone
)

// Outcome is what one HTTP attempt produced.
type Outcome struct {
	StatusCode int           // 0 when no response arrived
	NetworkErr bool          // connection failure or time-out: always retryable
	Refused    bool          // the destination is not allowed (SSRF guard): never retried
	RetryAfter time.Duration // parsed Retry-After, 0 when absent
}

// Decide classifies an attempt. retryCount is the number of attempts made
// before this one.
func (p RetryPolicy) Decide(o Outcome, retryCount int) Verdict {
	switch {
	case o.Refused:
		return GiveUp
	case !o.NetworkErr && o.StatusCode >= 200 && o.StatusCode < 300:
		return Delivered
	case !o.NetworkErr && o.StatusCode == http.StatusGone:
		return Gone
	}
	retryable := o.NetworkErr || slices.Contains(p.RetryOnStatus, o.StatusCode)
	if !retryable || retryCount >= p.MaxRetries {
		return GiveUp
	}
	return Retry
}

// Delay is how long to wait before retry number retryCount+1 (retryCount
// attempts failed so far, the last one included, minus one), in units of
// unit (one second in production). Exponential back-off doubles
// retry_delay per retry with "equal jitter" (a random point in the upper
// half), capped at max_delay; a Retry-After longer than that is honoured
// up to max_delay.
func (p RetryPolicy) Delay(retryCount int, retryAfter time.Duration, unit time.Duration, rnd *rand.Rand) time.Duration {
	if unit <= 0 {
		unit = time.Second
	}
	maxD := time.Duration(p.MaxDelay) * unit
	d := time.Duration(p.RetryDelay) * unit
	if p.ExponentialBackoff {
		for i := 0; i < retryCount && d < maxD; i++ {
			d *= 2
		}
		d = min(d, maxD)
		if d > 1 {
			half := d / 2
			var j int64
			if rnd != nil {
				j = rnd.Int64N(int64(d - half + 1))
			} else {
				j = rand.Int64N(int64(d - half + 1))
			}
			d = half + time.Duration(j)
		}
	}
	if retryAfter > d {
		d = retryAfter
	}
	return min(d, maxD)
}

// ParseRetryAfter reads a Retry-After header: delay seconds or an HTTP
// date, in units of unit per second (0 when absent or malformed).
func ParseRetryAfter(v string, now time.Time, unit time.Duration) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if unit <= 0 {
		unit = time.Second
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		if n > MaxDelayMax {
			n = MaxDelayMax
		}
		return time.Duration(n) * unit
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		secs := int64(t.Sub(now).Round(time.Second) / time.Second)
		return time.Duration(min(secs, MaxDelayMax)) * unit
	}
	return 0
}
