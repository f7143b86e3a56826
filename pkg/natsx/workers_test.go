package natsx

import (
	"sync"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

// Requests run at once however many are in flight (a busy worker never
// holds one back), later ones reuse the workers that are free, and idle
// workers end.
func TestWorkersRunEveryRequestAtOnceAndEndWhenIdle(t *testing.T) {
	w := newWorkers()
	w.idle = time.Second
	const n = 20
	var started, done sync.WaitGroup
	release := make(chan struct{})
	started.Add(n)
	done.Add(n)
	for range n {
		w.do(func() { started.Done(); <-release; done.Done() })
	}
	started.Wait() // would hang if a request waited for a worker
	close(release)
	done.Wait()

	// One at a time now: the workers left from the burst take them.
	grown := w.live.Load()
	for range 100 {
		ran := make(chan struct{})
		w.do(func() { close(ran) })
		<-ran
	}
	if now := w.live.Load(); now > grown || grown == 0 {
		t.Fatalf("%d workers after sequential requests, %d after the burst", now, grown)
	}
	testkit.Eventually(t, 5*time.Second, "idle workers end", func() bool { return w.live.Load() == 0 })
}

// A stopped service's idle workers end at once, not after their idle
// time; a request handed over after the stop still runs.
func TestStoppedWorkersEnd(t *testing.T) {
	w := newWorkers() // idle for 10 s
	var done sync.WaitGroup
	done.Add(3)
	for range 3 {
		w.do(done.Done)
	}
	done.Wait()
	w.stop()
	testkit.Eventually(t, 2*time.Second, "the idle workers end after the stop", func() bool { return w.live.Load() == 0 })
	ran := make(chan struct{})
	w.do(func() { close(ran) })
	<-ran
	testkit.Eventually(t, 2*time.Second, "a late request's worker ends too", func() bool { return w.live.Load() == 0 })
}
