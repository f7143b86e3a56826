package memory

import (
	"context"
	"slices"
	"sync"

	events "github.com/voiceai-platform/voiceai/proto-events"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
)

// Queue is app.Queue in memory, for the use-case tests: what was
// published, in order, each id once.
type Queue struct {
	mu      sync.Mutex
	seen    map[string]bool
	digests map[string]string // each event id's digest
	events  []app.PlatformEvent
	jobs    []app.Queued
}

// NewQueue returns an empty queue.
func NewQueue() *Queue { return &Queue{seen: map[string]bool{}} }

// PublishEvent keeps e unless its id was published already.
func (q *Queue) PublishEvent(_ context.Context, e app.PlatformEvent) error {
	// The subject must be one the stream would accept.
	if _, err := events.PlatformSubject(e.WorkspaceID, e.Event); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.digests == nil {
		q.digests = map[string]string{}
	}
	if digest, seen := q.digests[e.ID]; seen {
		if digest != e.Digest {
			return apperr.IdempotencyKeyReused
		}
		return nil
	}
	q.digests[e.ID] = e.Digest
	q.events = append(q.events, e)
	return nil
}

// QueueDelivery keeps each job unless its id was queued already; a job
// that would make no subject is refused, with the jobs before it kept.
func (q *Queue) QueueDelivery(_ context.Context, queued ...app.Queued) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, qd := range queued {
		job := qd.Job
		if _, err := events.WebhookDeliverySubject(job.GetWorkspaceId(), job.GetWebhookId()); err != nil {
			return err
		}
		if id := "job|" + app.JobID(job); !q.seen[id] {
			q.seen[id] = true
			q.jobs = append(q.jobs, qd)
		}
	}
	return nil
}

// Defer queues the job again at once (memory keeps no clock), once per
// d.Key, with what became of it before.
func (q *Queue) Defer(_ context.Context, d app.Deferral) error {
	job := d.Job
	if _, err := events.WebhookDeliverySubject(job.GetWorkspaceId(), job.GetWebhookId()); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if id := "deferral|" + d.Key; !q.seen[id] {
		q.seen[id] = true
		q.jobs = append(q.jobs, d.Queued)
	}
	return nil
}

// Events returns the events published, oldest first.
func (q *Queue) Events() []app.PlatformEvent {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]app.PlatformEvent(nil), q.events...)
}

// Jobs returns the jobs queued, oldest first.
func (q *Queue) Jobs() []*webhooksv1.DeliveryJob {
	q.mu.Lock()
	defer q.mu.Unlock()
	jobs := make([]*webhooksv1.DeliveryJob, len(q.jobs))
	for i, qd := range q.jobs {
		jobs[i] = qd.Job
	}
	return jobs
}

// Queued returns the jobs queued with their traces, oldest first.
func (q *Queue) Queued() []app.Queued {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.jobs)
}
