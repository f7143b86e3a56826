package memory

import (
	"context"
	"slices"
	"sync"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// History is app.DeliveryHistory in memory: every attempt stored, for
// tests of the rules that read the durable log.
type History struct {
	mu       sync.RWMutex
	attempts map[string]*webhooksv1.DeliveryAttempt // by attempt id
}

// NewHistory returns a history holding as.
func NewHistory(as ...*webhooksv1.DeliveryAttempt) *History {
	h := &History{attempts: map[string]*webhooksv1.DeliveryAttempt{}}
	h.Store(as...)
	return h
}

// Store makes as durable (an attempt id stored twice is kept once).
func (h *History) Store(as ...*webhooksv1.DeliveryAttempt) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, a := range as {
		h.attempts[a.GetAttemptId()] = a
	}
}

// Older returns up to limit attempts of a webhook that f selects, below
// position before (nil: from the newest), newest first.
func (h *History) Older(_ context.Context, webhookID string, f domain.LogFilter, before *app.LogPosition, limit int) ([]*webhooksv1.DeliveryAttempt, error) {
	h.mu.RLock()
	var out []*webhooksv1.DeliveryAttempt
	for _, a := range h.attempts {
		if a.GetWebhookId() == webhookID && (before == nil || before.Below(a)) && f.Matches(a.GetEvent(), a.GetSuccess(), a.GetAtUnixMs()) {
			out = append(out, a)
		}
	}
	h.mu.RUnlock()
	slices.SortFunc(out, app.NewestFirst)
	return out[:max(0, min(len(out), limit))], nil
}

// FirstAttempt returns the first attempt of a delivery, or nil.
func (h *History) FirstAttempt(_ context.Context, webhookID, deliveryID string) (*webhooksv1.DeliveryAttempt, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var found *webhooksv1.DeliveryAttempt
	for _, a := range h.attempts {
		if a.GetWebhookId() == webhookID && app.FirstOf(a, deliveryID, found) {
			found = a
		}
	}
	return found, nil
}
