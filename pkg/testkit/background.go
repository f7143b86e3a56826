package testkit

import (
	"context"
	"testing"
)

// Background runs f (a consumer, a projector) until the returned stop is
// called, or t ends; stop cancels f's context, waits for f to return and
// fails t if f returned an error.
func Background(t testing.TB, f func(ctx context.Context) error) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ended with %v; want nil", err)
		}
	}
	t.Cleanup(stop)
	return stop
}
