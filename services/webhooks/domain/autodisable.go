package domain

import (
	"sort"
	"time"
)

// AutoDisable is when a webhook whose deliveries keep failing for good is
// disabled automatically: after Failures of them in a row (0: never)
// spanning at least Over from the first to the latest.
type AutoDisable struct {
	Failures int
	Over     time.Duration
}

// MaxAutoDisableFailures bounds AutoDisable.Failures: a FailureLog keeps
// that many failure times per webhook (the attempts stream keeps 1000
// attempts per webhook, so a longer run could not be replayed anyway).
const MaxAutoDisableFailures = 1000

// DefaultAutoDisable is 20 deliveries failed for good in a row, over at
// least an hour.
func DefaultAutoDisable() AutoDisable { return AutoDisable{Failures: 20, Over: time.Hour} }

// Trips reports whether run disables its webhook.
func (r AutoDisable) Trips(run Run) bool {
	return r.Failures > 0 && run.Failures >= r.Failures && run.Latest.Sub(run.First) >= r.Over
}

// Reasons a webhook was disabled by the dispatcher rather than a user
// (its disabled_reason).
const (
	DisabledGone    = "gone"    // its receiver answered 410 Gone
	DisabledFailing = "failing" // AutoDisable tripped
)

// FailureLog is what a webhook's final attempts (test deliveries aside)
// say of its failures: when each delivery that failed for good since the
// latest success failed (the newest MaxAutoDisableFailures), and the
// latest failure ever seen. It is kept from the attempts of every
// replica, in any order they arrive.
type FailureLog struct {
	failures      []int64 // ms since the epoch, oldest first
	lastSuccessMs int64
	lastCode      int32
	lastFailureMs int64
}

// Observe takes a final attempt made at atMs: a success ends the run of
// failures before it, a failure (code answered, 0: none) adds to it.
func (l *FailureLog) Observe(success bool, code int32, atMs int64) {
	if success {
		if atMs >= l.lastSuccessMs {
			l.lastSuccessMs = atMs
			i := sort.Search(len(l.failures), func(i int) bool { return l.failures[i] > atMs })
			l.failures = l.failures[i:]
		}
		return
	}
	if atMs >= l.lastFailureMs {
		l.lastCode, l.lastFailureMs = code, atMs
	}
	if atMs < l.lastSuccessMs {
		return // a success came after it
	}
	i := sort.Search(len(l.failures), func(i int) bool { return l.failures[i] > atMs })
	l.failures = append(l.failures[:i], append([]int64{atMs}, l.failures[i:]...)...)
	if n := len(l.failures); n > MaxAutoDisableFailures {
		l.failures = l.failures[n-MaxAutoDisableFailures:]
	}
}

// Run is a webhook's deliveries that failed for good in a row, and its
// latest failure.
type Run struct {
	Failures      int       // in a row since the latest success (or since enabled)
	First, Latest time.Time // the first and latest of them
	// LastCode and LastAt are the latest delivery that failed for good,
	// run or not (LastAt zero: none seen).
	LastCode int32
	LastAt   time.Time
}

// Run is the run counted from enabledAt (a webhook enabled again starts
// over).
func (l *FailureLog) Run(enabledAt time.Time) Run {
	out := Run{LastCode: l.lastCode}
	if l.lastFailureMs > 0 {
		out.LastAt = time.UnixMilli(l.lastFailureMs)
	}
	i := sort.Search(len(l.failures), func(i int) bool { return l.failures[i] >= enabledAt.UnixMilli() })
	if run := l.failures[i:]; len(run) > 0 {
		out.Failures, out.First, out.Latest = len(run), time.UnixMilli(run[0]), time.UnixMilli(run[len(run)-1])
	}
	return out
}
