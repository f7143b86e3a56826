package app

import (
	"context"
	"sync"
	"time"
)

// Turns shares a dispatcher replica's delivery workers out between
// workspaces. A delivery holds its worker for as long as the receiver
// takes to answer, up to the attempt time-out: one workspace whose
// receiver hung, with jobs enough, held every worker while every other
// workspace's jobs waited behind its own in the queue.
//
// A workspace may have Share of its deliveries under way at once. Past
// that, while other workspaces have deliveries waiting and its own are
// slow (one under way for Slow or longer), its job goes back behind what
// is queued (Queue.Defer) for a while, its attempts neither made nor
// counted, so the others' jobs are reached. And it may never have more
// than Most under way, which leaves the other workers for a job of
// another workspace coming later: a job past Most waits, on its worker,
// for one of its workspace's deliveries to end, and goes back in the
// queue if none has within Recheck and others are waiting. A workspace
// whose receiver answers at once keeps every worker busy and puts back
// nothing: its deliveries end faster than its jobs wait.
type Turns struct {
	Backlog Backlog
	// Share is how many deliveries of one workspace may be under way at
	// once, whatever the others do (0: no bound), and Most at all (at
	// least Share; 0: no bound).
	Share, Most int
	// Slow is how long a delivery must have been under way for its
	// workspace to count as holding workers (0: 500 ms), and Recheck how
	// often a job past Most asks whether others are waiting (0: 250 ms).
	Slow, Recheck time.Duration

	mu     sync.Mutex
	of     map[string]*underWay
	ticket uint64
	others recentCounts // per workspace: the deliveries of the others waiting
}

// underWay is one workspace's deliveries on the replica.
type underWay struct {
	began   map[uint64]time.Time // deliveries under way, by ticket: when each began (the machine's clock)
	waiting []chan uint64        // jobs past Most, oldest first: each is handed a ticket when a delivery ends
}

// Take reports whether it is workspaceID's turn to deliver a job, and
// then counts the delivery as under way until done is called. It waits
// while the workspace has Most under way (see Turns).
func (t *Turns) Take(ctx context.Context, workspaceID string, now time.Time) (done func(), turn bool) {
	if t == nil || t.Share <= 0 {
		return func() {}, true
	}
	began := time.Now()
	at := func() time.Time { return now.Add(time.Since(began)) }
	t.mu.Lock()
	w := t.underWay(workspaceID)
	if len(w.began) < t.Share {
		done = t.start(workspaceID, w)
		t.mu.Unlock()
		return done, true
	}
	slow := w.slowSince(began, t.slow())
	t.mu.Unlock()
	if slow && t.othersWaiting(ctx, workspaceID, now) {
		return func() {}, false
	}
	for {
		t.mu.Lock()
		w = t.underWay(workspaceID)
		if t.Most <= 0 || len(w.began) < max(t.Most, t.Share) {
			done = t.start(workspaceID, w)
			t.mu.Unlock()
			return done, true
		}
		handed := make(chan uint64, 1)
		w.waiting = append(w.waiting, handed)
		t.mu.Unlock()
		timer := time.NewTimer(t.recheck())
		select {
		case ticket := <-handed:
			timer.Stop()
			return t.doneOf(workspaceID, ticket), true
		case <-timer.C:
		case <-ctx.Done():
		}
		if ticket, ok := t.leave(workspaceID, handed); ok { // handed a ticket meanwhile
			return t.doneOf(workspaceID, ticket), true
		}
		if ctx.Err() != nil || t.othersWaiting(ctx, workspaceID, at()) {
			return func() {}, false
		}
	}
}

func (t *Turns) slow() time.Duration {
	if t.Slow <= 0 {
		return 500 * time.Millisecond
	}
	return t.Slow
}

func (t *Turns) recheck() time.Duration {
	if t.Recheck <= 0 {
		return 250 * time.Millisecond
	}
	return t.Recheck
}

// underWay is workspaceID's deliveries, made when it has none. t.mu is held.
func (t *Turns) underWay(workspaceID string) *underWay {
	if t.of == nil {
		t.of = map[string]*underWay{}
	}
	w := t.of[workspaceID]
	if w == nil {
		w = &underWay{began: map[uint64]time.Time{}}
		t.of[workspaceID] = w
	}
	return w
}

// slowSince reports whether a delivery has been under way for slow or
// longer at now (the machine's clock).
func (w *underWay) slowSince(now time.Time, slow time.Duration) bool {
	for _, began := range w.began {
		if now.Sub(began) >= slow {
			return true
		}
	}
	return false
}

// start counts a delivery of workspaceID as under way from now. t.mu is
// held.
func (t *Turns) start(workspaceID string, w *underWay) (done func()) {
	t.ticket++
	w.began[t.ticket] = time.Now()
	return t.doneOf(workspaceID, t.ticket)
}

// doneOf ends the delivery of ticket: its worker's turn goes to the
// oldest job waiting past Most, which begins now.
func (t *Turns) doneOf(workspaceID string, ticket uint64) func() {
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		w := t.of[workspaceID]
		delete(w.began, ticket)
		if len(w.waiting) > 0 {
			next := w.waiting[0]
			w.waiting = w.waiting[1:]
			t.ticket++
			w.began[t.ticket] = time.Now()
			next <- t.ticket
			return
		}
		if len(w.began) == 0 {
			delete(t.of, workspaceID)
		}
	}
}

// leave takes handed out of the jobs waiting, unless a delivery's end
// handed it a ticket first.
func (t *Turns) leave(workspaceID string, handed chan uint64) (ticket uint64, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	select {
	case ticket := <-handed:
		return ticket, true
	default:
	}
	w := t.of[workspaceID]
	for i, c := range w.waiting {
		if c == handed {
			w.waiting = append(w.waiting[:i], w.waiting[i+1:]...)
			break
		}
	}
	if len(w.began) == 0 && len(w.waiting) == 0 {
		delete(t.of, workspaceID)
	}
	return 0, false
}

// othersWaiting reports whether workspaces other than workspaceID have
// deliveries queued, waiting or under way, as counted at most countFor
// ago. A count that cannot be had is taken as no: the job is delivered.
func (t *Turns) othersWaiting(ctx context.Context, workspaceID string, now time.Time) bool {
	others, ok := t.others.of(workspaceID, now, func() (uint64, error) {
		all, err := t.Backlog.Queued(ctx)
		if err != nil {
			return 0, err
		}
		own, err := waitingOf(ctx, t.Backlog, workspaceID)
		return all - min(own, all), err
	})
	return ok && others > 0
}

// turnWait is how long a job waits for its workspace's turn, its nth
// time: a unit, then twice as long each time up to 64 units, so that a
// workspace with a long queue of jobs over its share does not keep the
// dispatcher busy putting them back.
func turnWait(n int, unit time.Duration) time.Duration {
	return unit << min(max(n-1, 0), 6)
}
