// Package tick is the loop of every background task that wakes at a fixed
// interval (sweepers, watchers, refreshers): one place that stops its
// ticker and ends with its context; and of every one run again when it
// stops (Restart).
package tick

import (
	"context"
	"time"
)

// Every calls f every interval until ctx ends, the first time one interval
// after it is called, and never once ctx has ended (a tick and the end
// may arrive together); a call that outlasts the interval delays the
// next rather than piling calls up.
func Every(ctx context.Context, interval time.Duration, f func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if ctx.Err() != nil {
				return
			}
			f()
		}
	}
}

// Until is Every in a goroutine of its own until stop is called: the
// heartbeat of work that must say it is alive while it runs (a message
// in progress past its AckWait), whatever becomes of the context it was
// started under.
func Until(interval time.Duration, f func()) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	go Every(ctx, interval, f)
	return cancel
}

// Backoff is how long Restart waits before running a task again: First,
// doubling to Most; a run that lasted longer than Most starts it over.
type Backoff struct{ First, Most time.Duration }

// Restarting is the back-off of the platform's long-running background
// tasks: half a second, doubling to 30 s.
var Restarting = Backoff{First: 500 * time.Millisecond, Most: 30 * time.Second}

// Restart runs run until ctx ends: each time it returns before then (an
// error, or none), stopped is told why and when it runs again, after the
// back-off. It is the loop of a background task that must never stop for
// good while its process goes on saying it is ready (a consumer that
// could not be made as its stream was being restored, a follower whose
// leader was being elected): it heals as a connection does.
func (b Backoff) Restart(ctx context.Context, run func(context.Context) error, stopped func(err error, again time.Duration)) {
	wait := b.First
	for {
		began := time.Now()
		err := run(ctx)
		if ctx.Err() != nil {
			return
		}
		if time.Since(began) > b.Most {
			wait = b.First
		}
		if stopped != nil {
			stopped(err, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, b.Most)
	}
}
