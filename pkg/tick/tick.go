// Package tick is the loop of every background task that wakes at a fixed
// interval (sweepers, watchers, refreshers): one place that stops its
// ticker and ends with its context.
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
