package tick

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// Every calls f until its context ends, and returns then: f ending the
// context itself (a task that finds it is done) stops the loop too.
func TestEveryRunsUntilItsContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		Every(ctx, time.Millisecond, func() {
			calls++
			if calls == 3 {
				cancel()
			}
		})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Every did not return once its context ended")
	}
	if calls != 3 {
		t.Fatalf("f called %d times, want 3 (none after the context ended)", calls)
	}
}

// A context already ended calls f never.
func TestEveryWithAnEndedContextCallsNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	Every(ctx, time.Nanosecond, func() { t.Fatal("f called after the context ended") })
}

// Restart runs a task that stops again, with the back-off doubling from
// First to Most, tells each stop, and returns once its context ends,
// without running it again.
func TestRestartRunsATaskThatStopsAgain(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	runs := 0
	var waits []time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		Backoff{First: time.Millisecond, Most: 4 * time.Millisecond}.Restart(ctx, func(context.Context) error {
			runs++
			if runs == 5 {
				cancel()
				return nil
			}
			return errors.New("stream out of reach")
		}, func(err error, again time.Duration) {
			if err == nil {
				t.Error("a stop without its error")
			}
			waits = append(waits, again)
		})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Restart did not return once its context ended")
	}
	if runs != 5 || fmt.Sprint(waits) != "[1ms 2ms 4ms 4ms]" {
		t.Fatalf("%d runs, waits %v; want 5 runs, waits [1ms 2ms 4ms 4ms]", runs, waits)
	}
}
