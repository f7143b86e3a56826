package app

import (
	"context"
	"sync"
	"time"
)

// NotRetriedCrowded ends the error of an attempt not retried because its
// workspace had too many deliveries waiting: recover replays it.
const NotRetriedCrowded = "not retried: its workspace has too many deliveries waiting (VOICEAI_WEBHOOK_MAX_WAITING_PER_WORKSPACE); recover replays it"

// WorkspaceShare bounds what one workspace may keep waiting in the
// delivery queue every workspace shares. A retry waits there, held by the
// dispatchers' consumer until its time comes: a workspace whose receivers
// fail with long retry delays (a Retry-After of a day, many webhooks)
// could fill the consumer's room for held jobs and stall every other
// workspace's deliveries. Past Most, a delivery that would be retried
// fails for good instead (logged, recoverable).
type WorkspaceShare struct {
	Backlog Backlog
	// Most is how many deliveries one workspace may have waiting, queued
	// and scheduled retries together (0: no bound).
	Most int

	mu     sync.Mutex
	counts map[string]counted
}

type counted struct {
	n  uint64
	at time.Time
}

// countFor is how long a workspace's count is used before it is asked
// again: under a storm of failures, one question a second per workspace.
const countFor = time.Second

// Full reports whether workspaceID has Most deliveries waiting or more. A
// count that cannot be had (the stream not answering) is taken as room:
// retries are what heal such a moment.
func (s *WorkspaceShare) Full(ctx context.Context, workspaceID string, now time.Time) bool {
	if s == nil || s.Most <= 0 || s.Backlog == nil {
		return false
	}
	s.mu.Lock()
	c, ok := s.counts[workspaceID]
	s.mu.Unlock()
	if !ok || now.Sub(c.at) >= countFor {
		waiting, err := s.Backlog.Waiting(ctx, workspaceID)
		if err != nil {
			return false
		}
		c = counted{at: now}
		for _, n := range waiting {
			c.n += n
		}
		s.mu.Lock()
		if s.counts == nil {
			s.counts = map[string]counted{}
		}
		for ws, old := range s.counts { // what is kept stays as small as the workspaces failing now
			if now.Sub(old.at) >= countFor {
				delete(s.counts, ws)
			}
		}
		s.counts[workspaceID] = c
		s.mu.Unlock()
	}
	return c.n >= uint64(s.Most)
}
