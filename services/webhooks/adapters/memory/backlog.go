package memory

import (
	"context"
	"maps"
	"sync"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/services/webhooks/app"
)

// Backlog is app.Backlog over a memory Queue: the jobs it queued that
// were not delivered yet.
type Backlog struct {
	Queue *Queue

	mu        sync.Mutex
	delivered map[string]int // copies delivered, per job id (a deferred job is queued again)
}

// NewBacklog counts what q queued.
func NewBacklog(q *Queue) *Backlog { return &Backlog{Queue: q, delivered: map[string]int{}} }

var _ app.Backlog = (*Backlog)(nil)

// Delivered takes job out of the backlog, as the dispatcher does once it
// delivered it or gave it up.
func (b *Backlog) Delivered(job *webhooksv1.DeliveryJob) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.delivered[app.JobID(job)]++
}

// waiting is the jobs queued and not delivered, oldest first: the first
// copies of a job are those delivered.
func (b *Backlog) waiting() []*webhooksv1.DeliveryJob {
	skip := maps.Clone(b.delivered)
	var out []*webhooksv1.DeliveryJob
	for _, j := range b.Queue.Jobs() {
		if id := app.JobID(j); skip[id] > 0 {
			skip[id]--
			continue
		}
		out = append(out, j)
	}
	return out
}

// Queued implements app.Backlog.
func (b *Backlog) Queued(context.Context) (uint64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return uint64(len(b.waiting())), nil
}

// Waiting implements app.Backlog.
func (b *Backlog) Waiting(_ context.Context, workspaceID string) (map[string]uint64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]uint64{}
	for _, j := range b.waiting() {
		if j.GetWorkspaceId() == workspaceID {
			out[j.GetWebhookId()]++
		}
	}
	return out, nil
}
