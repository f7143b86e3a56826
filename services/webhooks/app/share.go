package app

import (
	"context"
	"sync"
	"time"
)

// NotRetriedCrowded ends the error of an attempt not retried because its
// workspace had too many deliveries waiting: recover replays it.
const NotRetriedCrowded = "not retried: its workspace has too many deliveries waiting (VOICEAI_WEBHOOK_MAX_WAITING_PER_WORKSPACE); recover replays it"

// NotQueuedCrowded is the error of a delivery not queued because its
// workspace had too many deliveries waiting: recover replays it.
const NotQueuedCrowded = "not sent: its workspace has too many deliveries waiting (VOICEAI_WEBHOOK_MAX_WAITING_PER_WORKSPACE); recover replays it"

// WorkspaceShare bounds what one workspace may keep waiting in the
// delivery queue every workspace shares. A retry waits there, held by the
// dispatchers' consumer until its time comes: a workspace whose receivers
// fail with long retry delays (a Retry-After of a day, many webhooks)
// could fill the consumer's room for held jobs and stall every other
// workspace's deliveries, and one whose events outrun its receivers
// could queue jobs without end ahead of every other workspace's. Past
// Most, a delivery that would be retried fails for good instead, and an
// event's deliveries are not queued (each logged, recoverable).
type WorkspaceShare struct {
	Backlog Backlog
	// Most is how many deliveries one workspace may have waiting, queued
	// and scheduled retries together (0: no bound).
	Most int

	counts recentCounts
}

type counted struct {
	n  uint64
	at time.Time
}

// countFor is how long a workspace's count is used before it is asked
// again: under a storm of failures, one question a second per workspace.
const countFor = time.Second

// recentCounts keeps a count per workspace for countFor, for WorkspaceShare
// and Turns, which ask the stream for it.
type recentCounts struct {
	mu     sync.Mutex
	counts map[string]counted
}

// of is workspaceID's count as of at most countFor before now, asked of
// count when older; false when it cannot be had.
func (r *recentCounts) of(workspaceID string, now time.Time, count func() (uint64, error)) (uint64, bool) {
	r.mu.Lock()
	c, ok := r.counts[workspaceID]
	r.mu.Unlock()
	if ok && now.Sub(c.at) < countFor {
		return c.n, true
	}
	n, err := count()
	if err != nil {
		return 0, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.counts == nil {
		r.counts = map[string]counted{}
	}
	for ws, old := range r.counts { // what is kept stays as small as the workspaces counted now
		if now.Sub(old.at) >= countFor {
			delete(r.counts, ws)
		}
	}
	r.counts[workspaceID] = counted{n: n, at: now}
	return n, true
}

// Full reports whether workspaceID has Most deliveries waiting or more. A
// count that cannot be had (the stream not answering) is taken as room:
// retries are what heal such a moment.
func (s *WorkspaceShare) Full(ctx context.Context, workspaceID string, now time.Time) bool {
	if s == nil || s.Most <= 0 || s.Backlog == nil {
		return false
	}
	n, ok := s.counts.of(workspaceID, now, func() (uint64, error) { return waitingOf(ctx, s.Backlog, workspaceID) })
	return ok && n >= uint64(s.Most)
}

// waitingOf is every delivery of workspaceID waiting.
func waitingOf(ctx context.Context, b Backlog, workspaceID string) (uint64, error) {
	waiting, err := b.Waiting(ctx, workspaceID)
	var n uint64
	for _, w := range waiting {
		n += w
	}
	return n, err
}
