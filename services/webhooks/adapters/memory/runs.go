package memory

import (
	"sync"
	"time"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// RunLog is app.FailureRuns in memory: each webhook's failure log, fed
// with the final attempts of every replica.
type RunLog struct {
	mu   sync.Mutex
	logs map[string]*domain.FailureLog
	gone func(webhookID string) bool // FollowDeletions
}

// Deletions is where a log learns which webhooks are deleted: the
// registry (Registry.Gone, Registry.WhenDeleted).
type Deletions interface {
	Gone(webhookID string) bool
	WhenDeleted(tell func(webhookID string))
}

// FollowDeletions has the log keep nothing of a webhook deleted: what it
// held goes when the deletion is recorded, and attempts of one deleted
// already (a replay of the attempts stream at a start) are not taken.
// Call it before the log is fed.
func (r *RunLog) FollowDeletions(d Deletions) {
	r.gone = d.Gone
	d.WhenDeleted(r.Forget)
}

// Forget drops what the log holds of a webhook.
func (r *RunLog) Forget(webhookID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.logs, webhookID)
}

// NewRunLog returns an empty log.
func NewRunLog() *RunLog { return &RunLog{logs: map[string]*domain.FailureLog{}} }

// Observe takes an attempt: a final one, not a test delivery, counts;
// an event logged as not sent (the webhook disabled or paused) is no
// failure of its receiver.
func (r *RunLog) Observe(a *webhooksv1.DeliveryAttempt) {
	if !a.GetFinal() || a.GetTest() || app.NotSent(a) || r.gone != nil && r.gone(a.GetWebhookId()) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.logs[a.GetWebhookId()]
	if l == nil {
		l = &domain.FailureLog{}
		r.logs[a.GetWebhookId()] = l
	}
	l.Observe(a.GetSuccess(), a.GetResponseCode(), a.GetAtUnixMs())
}

// Run is a webhook's run of deliveries that failed for good, counted from
// enabledAt.
func (r *RunLog) Run(webhookID string, enabledAt time.Time) domain.Run {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l := r.logs[webhookID]; l != nil {
		return l.Run(enabledAt)
	}
	return domain.Run{}
}
