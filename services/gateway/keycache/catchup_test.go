package keycache

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A key whose event reaches the feed only after the gateway asked is
// known once Wait returns.
func TestCatchUpWaitsForTheFeed(t *testing.T) {
	c := New()
	cu := &CatchUp{Cache: c, Timeout: time.Minute, Last: func(context.Context) (uint64, error) {
		go func() { // the event arrives after the stream was asked
			c.PutKey(key("s1", nil))
			c.Applied(5)
		}()
		return 5, nil
	}}
	if err := cu.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, st := c.Authenticate("s1", time.Now()); st != Valid {
		t.Fatalf("after catching up: %v", st)
	}
}

// Callers arriving while a round runs share the next one: a flood of
// unknown keys costs one stream read per round, not one per request.
func TestCatchUpRoundsAreShared(t *testing.T) {
	var calls atomic.Int32
	release := make(chan struct{})
	cu := &CatchUp{Cache: New(), Timeout: time.Minute, Last: func(context.Context) (uint64, error) {
		if calls.Add(1) == 1 {
			<-release
		}
		return 0, nil
	}}
	first := make(chan error)
	go func() { first <- cu.Wait(context.Background()) }()
	for calls.Load() == 0 {
		runtime.Gosched() // until the first round is reading
	}
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := cu.Wait(context.Background()); err != nil {
				t.Error(err)
			}
		}()
	}
	for cu.joined() < 50 {
		runtime.Gosched() // until all 50 wait for the next round
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if n := calls.Load(); n != 2 {
		t.Fatalf("%d stream reads for 51 waiters; want 2 rounds", n)
	}
}

// A feed that never gets there ends the round with an error, and the
// caller refuses the key as unknown.
func TestCatchUpGivesUp(t *testing.T) {
	cu := &CatchUp{Cache: New(), Timeout: 10 * time.Millisecond, Last: func(context.Context) (uint64, error) { return 7, nil }}
	if err := cu.Wait(context.Background()); err == nil {
		t.Fatal("a round waiting for an event never applied succeeded")
	}
}

// A cache behind the stream's last key event says so (a readiness check:
// a replica whose feed stalled would go on accepting keys revoked since);
// one that holds it, or a stream that cannot be read, says nothing.
func TestBehindSaysWhenTheFeedLags(t *testing.T) {
	c := New()
	last := func(seq uint64, err error) func(context.Context) (uint64, error) {
		return func(context.Context) (uint64, error) { return seq, err }
	}
	cu := &CatchUp{Cache: c, Timeout: 50 * time.Millisecond, Last: last(7, nil)}
	if err := cu.Behind(context.Background()); err == nil {
		t.Fatal("a cache that applied nothing of 7 events is not behind")
	}
	c.Applied(7)
	cu.behindAt = time.Time{} // its last answer given again for a second: asked anew
	if err := cu.Behind(context.Background()); err != nil {
		t.Fatalf("a cache holding the last event: %v", err)
	}
	cu.Last, cu.behindAt = last(0, context.DeadlineExceeded), time.Time{}
	if err := cu.Behind(context.Background()); err != nil {
		t.Fatalf("a stream that cannot be read: %v; the cache serves meanwhile", err)
	}
}
