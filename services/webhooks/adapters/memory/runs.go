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
}

// NewRunLog returns an empty log.
func NewRunLog() *RunLog { return &RunLog{logs: map[string]*domain.FailureLog{}} }

// Observe takes an attempt: a final one, not a test delivery, counts;
// an event logged as not sent to a disabled webhook is no failure of its
// receiver.
func (r *RunLog) Observe(a *webhooksv1.DeliveryAttempt) {
	if !a.GetFinal() || a.GetTest() || a.GetError() == app.NotSentDisabled {
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
