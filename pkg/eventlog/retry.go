package eventlog

import (
	"context"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// RetryWhileUnavailable runs op until it succeeds, fails with an error
// IsUnavailable does not cure, or ctx ends, waiting 50 ms doubling to 2 s
// between attempts and telling notify of each wait. It is how a process
// waits out a stream between leaders (just after a partition heals)
// instead of exiting; op must be safe to repeat.
func RetryWhileUnavailable[T any](ctx context.Context, op func() (T, error), notify func(err error, wait time.Duration)) (T, error) {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval, b.MaxElapsedTime = 50*time.Millisecond, 2*time.Second, 0
	return backoff.RetryNotifyWithData(func() (T, error) {
		v, err := op()
		if err != nil && !IsUnavailable(err) {
			return v, backoff.Permanent(err)
		}
		return v, err
	}, backoff.WithContext(b, ctx), notify)
}
