package app

import (
	"sync"
)

// RunQueue is one invocation's queue of run jobs as a runner last saw it.
// Each invocation has a queue of its own, so a runner chooses whose jobs
// it takes next instead of taking them in the order they were queued.
type RunQueue struct {
	Workspace  string
	Invocation string
	// Waiting is how many jobs no runner has taken yet.
	Waiting int
}

// Scheduler is the rule by which a runner chooses the queue its next jobs
// come from, so that no workspace's backlog delays another's runs, nor
// one invocation's the other invocations of its workspace. It does no I/O:
// its state is the jobs this runner holds, per workspace and invocation.
//
//   - A free slot goes to the workspace that runs the fewest of this
//     runner's jobs, the least recently served first among equals; within
//     it, to the invocation holding the fewest jobs, the least recently
//     served first.
//   - A workspace runs at most Slots jobs at once; the runner runs at most
//     Slots+Headroom. One workspace alone therefore gets every slot it had
//     before, and another workspace arriving finds Headroom slots free
//     however long the first one's runs take.
//   - A run waiting for something outside the runner (an agent endpoint's
//     slot) is paused: it holds its job but no slot, which goes to other
//     invocations. Held jobs are bounded too: Slots per invocation (more
//     of its runs would wait for the same endpoint), 2*Slots per workspace
//     (however many of its runs wait on slow endpoints, Headroom held
//     places remain for other workspaces; alone, it still runs Slots
//     beside Slots paused), 2*Slots+Headroom in all.
//
// Its methods are safe for concurrent use.
type Scheduler struct {
	slots, headroom int

	mu                  sync.Mutex
	running, held       map[string]int // per workspace
	heldInv             map[queueKey]int
	servedWS            map[string]uint64
	servedInv           map[queueKey]uint64
	tick                uint64
	totalRun, totalHeld int
}

type queueKey struct{ ws, inv string }

// NewScheduler is the rule of a runner running slots jobs at once, with
// headroom more for workspaces other than the busiest (headroom 0: a
// quarter of slots, at least 1).
func NewScheduler(slots, headroom int) *Scheduler {
	slots = max(slots, 1)
	if headroom <= 0 {
		headroom = max(slots/4, 1)
	}
	return &Scheduler{slots: slots, headroom: headroom, running: map[string]int{}, held: map[string]int{},
		heldInv: map[queueKey]int{}, servedWS: map[string]uint64{}, servedInv: map[queueKey]uint64{}}
}

// Capacity is how many jobs the runner may run at once in all.
func (s *Scheduler) Capacity() int { return s.slots + s.headroom }

// Next is the queue to take jobs from now and how many to take, or ok
// false when no job may be taken (every queue is empty, or every queue's
// workspace is at its bound, or the runner is full). The queue counts as
// served: ask again for the next.
func (s *Scheduler) Next(queues []RunQueue) (q RunQueue, n int, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	free := min(s.slots+s.headroom-s.totalRun, 2*s.slots+s.headroom-s.totalHeld)
	if free <= 0 {
		return RunQueue{}, 0, false
	}
	best, candidates := -1, 0
	for i, c := range queues {
		if c.Waiting <= 0 || s.running[c.Workspace] >= s.slots || s.held[c.Workspace] >= 2*s.slots ||
			s.heldInv[queueKey{c.Workspace, c.Invocation}] >= s.slots {
			continue
		}
		candidates++
		if best < 0 || s.before(c, queues[best]) {
			best = i
		}
	}
	if best < 0 {
		s.prune(queues)
		return RunQueue{}, 0, false
	}
	q = queues[best]
	n = min(free, q.Waiting, s.slots-s.running[q.Workspace], 2*s.slots-s.held[q.Workspace], s.slots-s.heldInv[queueKey{q.Workspace, q.Invocation}])
	if candidates > 1 {
		// Others wait too: take a share now, the rest after they had theirs.
		n = min(n, max(1, free/candidates))
	}
	s.tick++
	s.servedWS[q.Workspace], s.servedInv[queueKey{q.Workspace, q.Invocation}] = s.tick, s.tick
	if len(s.servedInv) > 4*len(queues)+1024 {
		s.prune(queues)
	}
	return q, n, true
}

// before reports whether queue a's next job comes before b's.
func (s *Scheduler) before(a, b RunQueue) bool {
	if a.Workspace != b.Workspace {
		if ra, rb := s.running[a.Workspace], s.running[b.Workspace]; ra != rb {
			return ra < rb
		}
		return s.servedWS[a.Workspace] < s.servedWS[b.Workspace]
	}
	ka, kb := queueKey{a.Workspace, a.Invocation}, queueKey{b.Workspace, b.Invocation}
	if ha, hb := s.heldInv[ka], s.heldInv[kb]; ha != hb {
		return ha < hb
	}
	return s.servedInv[ka] < s.servedInv[kb]
}

// prune forgets when queues gone and holding nothing were served.
func (s *Scheduler) prune(queues []RunQueue) {
	live := make(map[queueKey]bool, len(queues))
	liveWS := map[string]bool{}
	for _, q := range queues {
		live[queueKey{q.Workspace, q.Invocation}], liveWS[q.Workspace] = true, true
	}
	for k := range s.servedInv {
		if !live[k] && s.heldInv[k] == 0 {
			delete(s.servedInv, k)
		}
	}
	for ws := range s.servedWS {
		if !liveWS[ws] && s.held[ws] == 0 {
			delete(s.servedWS, ws)
		}
	}
}

// Took records a job taken from the workspace's invocation: it runs.
func (s *Scheduler) Took(ws, inv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running[ws]++
	s.held[ws]++
	s.heldInv[queueKey{ws, inv}]++
	s.totalRun++
	s.totalHeld++
}

// Paused records a running job of the workspace waiting on something
// outside the runner: it frees its slot and keeps its job.
func (s *Scheduler) Paused(ws string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running[ws]--
	s.totalRun--
}

// Resumed records a paused job running again. It takes its slot back at
// once, even beyond the bounds (it holds what it waited for): new jobs
// wait until the runner is below its bounds again.
func (s *Scheduler) Resumed(ws string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running[ws]++
	s.totalRun++
}

// Done records a running job finished (acked, failed or given back).
func (s *Scheduler) Done(ws, inv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := queueKey{ws, inv}
	s.running[ws]--
	s.held[ws]--
	s.heldInv[k]--
	s.totalRun--
	s.totalHeld--
	if s.held[ws] <= 0 {
		delete(s.held, ws)
		delete(s.running, ws)
	}
	if s.heldInv[k] <= 0 {
		delete(s.heldInv, k)
	}
}

// Held is how many of the invocation's jobs the runner holds.
func (s *Scheduler) Held(ws, inv string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.heldInv[queueKey{ws, inv}]
}

// Load is how many jobs the runner runs and holds now, for metrics and
// tests.
func (s *Scheduler) Load() (running, held int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.totalRun, s.totalHeld
}
