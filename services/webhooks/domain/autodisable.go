package domain

import "time"

// AutoDisable is when a webhook whose deliveries keep failing for good is
// disabled automatically: after Failures of them in a row (0: never)
// spanning at least Over from the first to the latest.
type AutoDisable struct {
	Failures int
	Over     time.Duration
}

// DefaultAutoDisable is 20 deliveries failed for good in a row, over at
// least an hour.
func DefaultAutoDisable() AutoDisable { return AutoDisable{Failures: 20, Over: time.Hour} }

// Trips reports whether a run of n failures in a row, the first at since
// and the latest at now, disables the webhook.
func (r AutoDisable) Trips(n int, since, now time.Time) bool {
	return r.Failures > 0 && n >= r.Failures && now.Sub(since) >= r.Over
}

// Reasons a webhook was disabled by the dispatcher rather than a user
// (its disabled_reason).
const (
	DisabledGone    = "gone"    // its receiver answered 410 Gone
	DisabledFailing = "failing" // AutoDisable tripped
)
