package natsx

import (
	"sync"
	"sync/atomic"
	"time"
)

// workerIdle is how long a request worker waits for the next request
// before it ends.
const workerIdle = 10 * time.Second

// workers runs each admitted request on a goroutine kept for the next
// one. A fresh goroutine per request grew its stack through the handler
// chain (routing, decoding, the use case) every time: copying stacks was
// 3-7% of the gateway bench's CPU and 4% of a create's. A kept worker has
// grown its stack already. There are as many workers as requests in
// flight at the busiest moment of the last workerIdle, bounded by the
// admission.
type workers struct {
	work    chan func()
	idle    time.Duration
	live    atomic.Int32   // workers running
	busy    sync.WaitGroup // requests being served
	stopped chan struct{}  // closed by stop
	once    sync.Once
}

func newWorkers() *workers {
	return &workers{work: make(chan func()), idle: workerIdle, stopped: make(chan struct{})}
}

// stop ends the idle workers, and each busy one after its request.
func (w *workers) stop() { w.once.Do(func() { close(w.stopped) }) }

// drain waits for the requests being served to be answered, at most for
// limit: true when they all were. (Past the limit its waiter is left to
// the process's end.)
func (w *workers) drain(limit time.Duration) bool {
	done := make(chan struct{})
	go func() { w.busy.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(limit):
		return false
	}
}

// do runs f on an idle worker, or on a new one when none is idle.
func (w *workers) do(f func()) {
	w.busy.Add(1)
	job := func() {
		defer w.busy.Done()
		f()
	}
	select {
	case w.work <- job:
	default:
		go w.loop(job)
	}
}

func (w *workers) loop(f func()) {
	w.live.Add(1)
	defer w.live.Add(-1)
	idle := time.NewTimer(w.idle)
	defer idle.Stop()
	for {
		f()
		idle.Reset(w.idle)
		select {
		case f = <-w.work:
		case <-idle.C:
			return
		case <-w.stopped:
			return
		}
	}
}
