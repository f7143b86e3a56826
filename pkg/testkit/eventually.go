package testkit

import (
	"testing"
	"time"
)

// Eventually polls cond until it holds, failing the test once within has
// passed. It waits for a state to be reached, never for time to pass:
// absence is proven by a terminal state, not by an elapsed delay.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// WaitForFreshMinute returns once at least need remains of the current
// wall-clock minute, so a test of per-minute limits does not straddle a
// window's boundary.
func WaitForFreshMinute(t testing.TB, need time.Duration) {
	t.Helper()
	left := func() time.Duration { return time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)) }
	if left() < need {
		Eventually(t, need+2*time.Second, "the next minute", func() bool { return left() >= need })
	}
}
