package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// sleep waits d, or until ctx ends. Tests replace it to see the waits
// asked for without waiting them.
var sleep = func(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// transient tells whether err may go away if the same request is sent
// later (the key's rate limit, the platform restarting or overloaded, no
// connection), and how long the server asked to wait (0: it did not say).
func transient(err error) (time.Duration, bool) {
	var ae *APIError
	if errors.As(err, &ae) {
		switch ae.Code {
		case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return ae.RetryAfter, true
		}
		return 0, false
	}
	var ne *netError
	return 0, errors.As(err, &ne)
}

// persist calls op until it succeeds, fails for good, or ctx ends (then
// ctx's error). A transient failure is tried again after an exponential
// back-off, or after the server's Retry-After when that is longer, however
// long; what it is doing is said on stderr once per outage, and again when
// the platform answers. With cutShort, a wait that would pass ctx's
// deadline is not begun: op's error is returned at once.
func (a *app) persist(ctx context.Context, what string, cutShort bool, op func() error) error {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 500 * time.Millisecond
	b.MaxInterval = 30 * time.Second
	b.MaxElapsedTime = 0 // until ctx ends
	var down time.Time   // when the current outage began; zero: none
	for {
		err := op()
		if err == nil {
			if !down.IsZero() {
				fmt.Fprintf(a.stderr, "%s: the platform answers again (after %s)\n", what, time.Since(down).Round(time.Second))
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		asked, ok := transient(err)
		if !ok {
			return err
		}
		wait := max(b.NextBackOff(), asked)
		if dl, has := ctx.Deadline(); cutShort && has && time.Until(dl) < wait {
			return err
		}
		if down.IsZero() {
			down = time.Now()
			until := "until it answers"
			if dl, has := ctx.Deadline(); cutShort && has {
				until = fmt.Sprintf("for up to %s", time.Until(dl).Round(time.Second))
			}
			msg := "trying again " + until
			if asked > 0 {
				msg = fmt.Sprintf("trying again as the server asks (in %s), then %s", asked, until)
			}
			fmt.Fprintf(a.stderr, "%s: %v; %s\n", what, err, msg)
		}
		if err := sleep(ctx, wait); err != nil {
			return err
		}
	}
}
