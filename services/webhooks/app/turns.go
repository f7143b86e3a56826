package app

import (
	"context"
	"sync"
	"time"
)

// Turns shares a dispatcher replica's delivery workers out between
// workspaces. A delivery holds its worker for as long as the receiver
// takes to answer, up to the attempt time-out: one workspace whose
// receiver hangs, with jobs enough, held every worker while every other
// workspace's jobs waited behind its own in the queue. While other
// workspaces have deliveries waiting, a workspace may have Share of its
// deliveries under way at once on the replica; alone, Most, which leaves
// a job of another workspace coming later a worker free. A job of a
// workspace over its turn goes back behind what is queued (Queue.Defer)
// for a while, its attempts neither made nor counted.
type Turns struct {
	Backlog Backlog
	// Share is how many deliveries of one workspace may be under way at
	// once while others wait (0: no bound), and Most while none do (at
	// least Share; 0: no bound).
	Share, Most int

	mu     sync.Mutex
	busy   map[string]int     // deliveries under way, per workspace
	others map[string]counted // n > 0: others had deliveries waiting, as of at
}

// Take counts a delivery of workspaceID as under way until done is
// called, and reports whether it is the workspace's turn: not when it
// has Most under way already, nor its share while other workspaces have
// deliveries waiting.
func (t *Turns) Take(ctx context.Context, workspaceID string, now time.Time) (done func(), turn bool) {
	if t == nil || t.Share <= 0 {
		return func() {}, true
	}
	t.mu.Lock()
	if t.busy == nil {
		t.busy = map[string]int{}
	}
	t.busy[workspaceID]++
	n := t.busy[workspaceID]
	t.mu.Unlock()
	done = func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.busy[workspaceID]--; t.busy[workspaceID] <= 0 {
			delete(t.busy, workspaceID)
		}
	}
	switch {
	case n <= t.Share:
		return done, true
	case t.Most > 0 && n > max(t.Most, t.Share):
		return done, false
	default:
		return done, !t.othersWaiting(ctx, workspaceID, now)
	}
}

// othersWaiting reports whether workspaces other than workspaceID have
// deliveries queued, waiting or under way, as counted at most countFor
// ago. A count that cannot be had is taken as no: the job is delivered.
func (t *Turns) othersWaiting(ctx context.Context, workspaceID string, now time.Time) bool {
	t.mu.Lock()
	c, ok := t.others[workspaceID]
	t.mu.Unlock()
	if ok && now.Sub(c.at) < countFor {
		return c.n > 0
	}
	all, err := t.Backlog.Queued(ctx)
	if err != nil {
		return false
	}
	mine, err := t.Backlog.Waiting(ctx, workspaceID)
	if err != nil {
		return false
	}
	var own uint64
	for _, n := range mine {
		own += n
	}
	c = counted{at: now}
	if all > own {
		c.n = 1
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.others == nil {
		t.others = map[string]counted{}
	}
	for ws, old := range t.others { // kept as small as the workspaces over their share now
		if now.Sub(old.at) >= countFor {
			delete(t.others, ws)
		}
	}
	t.others[workspaceID] = c
	return c.n > 0
}

// turnWait is how long a job waits for its workspace's turn, its nth
// time: a unit, then twice as long each time up to 64 units, so that a
// workspace with a long queue of jobs over its share does not keep the
// dispatcher busy putting them back.
func turnWait(n int, unit time.Duration) time.Duration {
	return unit << min(max(n-1, 0), 6)
}
