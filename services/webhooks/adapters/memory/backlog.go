package memory

import (
	"context"
	"sync"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/services/webhooks/app"
)

// Backlog is app.Backlog over a memory Queue: the jobs it queued that
// were not delivered yet.
type Backlog struct {
	Queue *Queue

	mu        sync.Mutex
	delivered map[string]bool // job ids
}

// NewBacklog counts what q queued.
func NewBacklog(q *Queue) *Backlog { return &Backlog{Queue: q, delivered: map[string]bool{}} }

var _ app.Backlog = (*Backlog)(nil)

// Delivered takes job out of the backlog, as the dispatcher does once it
// delivered it or gave it up.
func (b *Backlog) Delivered(job *webhooksv1.DeliveryJob) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.delivered[app.JobID(job)] = true
}

// Waiting implements app.Backlog.
func (b *Backlog) Waiting(_ context.Context, workspaceID string) (map[string]uint64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]uint64{}
	for _, j := range b.Queue.Jobs() {
		if j.GetWorkspaceId() == workspaceID && !b.delivered[app.JobID(j)] {
			out[j.GetWebhookId()]++
		}
	}
	return out, nil
}
