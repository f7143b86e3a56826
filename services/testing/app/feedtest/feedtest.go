// Package feedtest is the one conformance suite of app.InvocationFeed:
// every implementation (JetStream, memory) runs it.
package feedtest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/testing/app"
)

// Open returns a feed with nothing to deliver, and add, which appends an
// invocation event (its data) to what it follows.
type Open func(t *testing.T) (f app.InvocationFeed, add func(subject string, data []byte))

// Run runs every case on fresh feeds from open.
func Run(t *testing.T, open Open) {
	t.Run("DeliversInOrder", func(t *testing.T) { inOrder(t, open) })
	t.Run("AFailedEventIsDeliveredAgain", func(t *testing.T) { redelivered(t, open) })
	t.Run("AHandledEventIsNotDeliveredToTheNextFollow", func(t *testing.T) { durable(t, open) })
}

func subject(t *testing.T, id string) string {
	t.Helper()
	s, err := events.TestingSubject("ws", events.TestingKindInvocation, id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// follower records what a Follow handled; fail decides whether a
// delivery fails. It follows until stopped, or until the test ends.
type follower struct {
	mu      sync.Mutex
	seen    []string // every delivery's data
	handled []string // the deliveries handled
	cancel  context.CancelFunc
	stopped chan struct{}
}

func follow(t *testing.T, f app.InvocationFeed, fail func(data string, n int) bool) *follower {
	ctx, cancel := context.WithCancel(context.Background())
	fl := &follower{cancel: cancel, stopped: make(chan struct{})}
	t.Cleanup(fl.stop)
	go func() {
		defer close(fl.stopped)
		err := f.Follow(ctx, func(_ context.Context, rec app.Record, working func()) error {
			working()
			fl.mu.Lock()
			defer fl.mu.Unlock()
			d := string(rec.Data)
			fl.seen = append(fl.seen, d)
			n := 0
			for _, s := range fl.seen {
				if s == d {
					n++
				}
			}
			if fail != nil && fail(d, n) {
				return errors.New("not now")
			}
			fl.handled = append(fl.handled, d)
			return nil
		})
		if err != nil {
			t.Error(err)
		}
	}()
	return fl
}

// stop ends the Follow and waits for it to return.
func (fl *follower) stop() {
	fl.cancel()
	<-fl.stopped
}

func (fl *follower) got() (seen, handled []string) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	return slices.Clone(fl.seen), slices.Clone(fl.handled)
}

func inOrder(t *testing.T, open Open) {
	f, add := open(t)
	for _, id := range []string{"tinv_1", "tinv_2", "tinv_3"} {
		add(subject(t, id), []byte(id))
	}
	fl := follow(t, f, nil)
	testkit.Eventually(t, 10*time.Second, "three events handled", func() bool { _, h := fl.got(); return len(h) >= 3 })
	if _, h := fl.got(); !slices.Equal(h[:3], []string{"tinv_1", "tinv_2", "tinv_3"}) {
		t.Fatalf("handled %v; want in order", h)
	}
}

func redelivered(t *testing.T, open Open) {
	f, add := open(t)
	add(subject(t, "tinv_1"), []byte("tinv_1"))
	fl := follow(t, f, func(d string, n int) bool { return n == 1 }) // every first delivery fails
	testkit.Eventually(t, 15*time.Second, "the failed event handled on its next delivery", func() bool {
		_, h := fl.got()
		return slices.Contains(h, "tinv_1")
	})
	if s, _ := fl.got(); len(s) < 2 {
		t.Fatalf("seen %v; want a second delivery", s)
	}
}

func durable(t *testing.T, open Open) {
	f, add := open(t)
	add(subject(t, "tinv_1"), []byte("tinv_1"))
	add(subject(t, "tinv_2"), []byte("tinv_2"))
	fl := follow(t, f, nil)
	testkit.Eventually(t, 10*time.Second, "two events handled", func() bool { _, h := fl.got(); return len(h) >= 2 })
	fl.stop()
	add(subject(t, "tinv_3"), []byte("tinv_3"))
	again := follow(t, f, nil)
	testkit.Eventually(t, 10*time.Second, "the new event handled", func() bool {
		_, h := again.got()
		return slices.Contains(h, "tinv_3")
	})
	if s, _ := again.got(); s[0] != "tinv_3" {
		t.Fatalf("the next follow saw %v first; want only what came after", s)
	}
}
