// Package counterstest is the one conformance suite of app.Counters:
// every implementation (JetStream, memory) runs it.
package counterstest

import (
	"context"
	"testing"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/services/testing/app"
)

// Open returns counters all at 0, and add, which adds to one as a runner
// does.
type Open func(t *testing.T) (c app.Counters, add func(subject string, n int64))

// Run runs every case on fresh counters from open.
func Run(t *testing.T, open Open) {
	t.Run("NothingCountedIsZero", func(t *testing.T) {
		c, _ := open(t)
		if n, err := c.Count(context.Background(), subject(t, "tinv_a", "done")); err != nil || n != 0 {
			t.Fatalf("count %d, %v; want 0", n, err)
		}
	})
	t.Run("CountIsTheSumOfAdds", func(t *testing.T) {
		c, add := open(t)
		done, passed := subject(t, "tinv_a", "done"), subject(t, "tinv_a", "passed")
		add(done, 3)
		add(done, 2)
		add(passed, 1)
		add(subject(t, "tinv_b", "done"), 7)
		for s, want := range map[string]int64{done: 5, passed: 1} {
			if n, err := c.Count(context.Background(), s); err != nil || n != want {
				t.Fatalf("%s: %d, %v; want %d", s, n, err, want)
			}
		}
	})
}

func subject(t *testing.T, inv, name string) string {
	t.Helper()
	s, err := events.TestCountSubject(inv, 1, name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
