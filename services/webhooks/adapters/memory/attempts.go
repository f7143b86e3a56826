package memory

import (
	"context"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// Sizes of the in-memory delivery log of each webhook.
const (
	// RecentAttempts is how many attempts of each webhook the log keeps
	// (the logs endpoint's maximum limit).
	RecentAttempts = app.MaxLogLimit
	// HealthWindow is how many recent non-test attempts the success rate
	// covers.
	HealthWindow = 100
)

// BodyBudget bounds the request bodies the in-memory log keeps per
// webhook; older bodies are read from the durable log when needed.
const BodyBudget = 1 << 20

type hookLog struct {
	recent      []*webhooksv1.DeliveryAttempt // oldest first, at most RecentAttempts
	outcomes    []bool                        // recent non-test attempts, oldest first
	consecutive int
	lastSuccess int64 // unix ms
	lastFailure int64
	lastError   string
	lastCode    int32
}

// AttemptLog is every webhook's recent delivery attempts and health,
// kept in memory. The service feeds it from the WEBHOOK_ATTEMPTS stream
// (adapters.FollowAttemptLog; the stream keeps the newest attempts of
// each webhook, so a restart rebuilds it).
type AttemptLog struct {
	mu    sync.RWMutex
	hooks map[string]*hookLog
	// runs are the deliveries that failed for good, in a row (what the
	// auto-disable rule counts).
	runs *RunLog
	gone func(webhookID string) bool // FollowDeletions
}

// FollowDeletions has the log keep nothing of a webhook deleted (up to
// RecentAttempts attempts and BodyBudget of bodies each): what it held
// goes when the deletion is recorded, and attempts of one deleted already
// (a replay of the attempts stream at a start) are not taken. Call it
// before the log is fed.
func (l *AttemptLog) FollowDeletions(d Deletions) {
	l.gone = d.Gone
	l.runs.FollowDeletions(d)
	d.WhenDeleted(l.forget)
}

// forget drops what the log holds of a webhook.
func (l *AttemptLog) forget(webhookID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.hooks, webhookID)
}

// NewAttemptLog returns an empty log.
func NewAttemptLog() *AttemptLog { return &AttemptLog{hooks: map[string]*hookLog{}, runs: NewRunLog()} }

// Run is a webhook's run of deliveries that failed for good, counted from
// enabledAt, and its latest failure.
func (l *AttemptLog) Run(webhookID string, enabledAt time.Time) domain.Run {
	return l.runs.Run(webhookID, enabledAt)
}

// Add records an attempt (a second copy of the same attempt is ignored).
func (l *AttemptLog) Add(a *webhooksv1.DeliveryAttempt) {
	if l.gone != nil && l.gone(a.GetWebhookId()) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.hooks[a.GetWebhookId()]
	if h == nil {
		h = &hookLog{}
		l.hooks[a.GetWebhookId()] = h
	}
	if slices.ContainsFunc(h.recent, func(x *webhooksv1.DeliveryAttempt) bool { return x.GetAttemptId() == a.GetAttemptId() }) {
		return
	}
	// Keep the list in time order even when a record arrives late.
	i := len(h.recent)
	for i > 0 && h.recent[i-1].GetAtUnixMs() > a.GetAtUnixMs() {
		i--
	}
	l.runs.Observe(a)
	h.recent = slices.Insert(h.recent, i, a)
	if len(h.recent) > RecentAttempts {
		h.recent = h.recent[len(h.recent)-RecentAttempts:]
	}
	h.keepBodies()
	if a.GetTest() || app.NotSent(a) { // no outcome of the receiver
		return
	}
	h.outcomes = append(h.outcomes, a.GetSuccess())
	if len(h.outcomes) > HealthWindow {
		h.outcomes = h.outcomes[len(h.outcomes)-HealthWindow:]
	}
	if a.GetSuccess() {
		h.consecutive = 0
		h.lastSuccess = max(h.lastSuccess, a.GetAtUnixMs())
	} else {
		h.consecutive++
		if a.GetAtUnixMs() >= h.lastFailure {
			h.lastFailure, h.lastError, h.lastCode = a.GetAtUnixMs(), a.GetError(), a.GetResponseCode()
		}
	}
}

// Record adds a: the in-memory log is app.AttemptLog on its own, for
// tests.
func (l *AttemptLog) Record(_ context.Context, a *webhooksv1.DeliveryAttempt) error {
	l.Add(a)
	return nil
}

// RecordDurable is Record: memory is all the durability this log has.
func (l *AttemptLog) RecordDurable(ctx context.Context, a *webhooksv1.DeliveryAttempt) error {
	return l.Record(ctx, a)
}

// keepBodies drops the request bodies of the oldest attempts beyond
// BodyBudget (the attempts stay). An attempt is replaced by a copy
// without its body, never changed: Find and Recent have handed it out,
// and a resend reads its body outside the log's lock.
func (h *hookLog) keepBodies() {
	total := 0
	for i := len(h.recent) - 1; i >= 0; i-- {
		a := h.recent[i]
		if total += len(a.GetRequestBody()); total > BodyBudget && a.RequestBody != nil {
			bodiless := proto.Clone(a).(*webhooksv1.DeliveryAttempt)
			bodiless.RequestBody = nil
			h.recent[i] = bodiless
		}
	}
}

// Recent returns up to limit of the attempts held of a webhook that f
// selects, the last recorded first; older attempts are in the durable
// log only.
func (l *AttemptLog) Recent(webhookID string, f domain.LogFilter, limit int) (out []*webhooksv1.DeliveryAttempt) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	h := l.hooks[webhookID]
	if h == nil {
		return nil
	}
	for i := len(h.recent) - 1; i >= 0 && len(out) < limit; i-- {
		if a := h.recent[i]; f.Matches(a.GetEvent(), a.GetSuccess(), a.GetAtUnixMs()) {
			out = append(out, a)
		}
	}
	return out
}

// HeldSince is when the oldest attempt held of a webhook was made (0:
// none held).
func (l *AttemptLog) HeldSince(webhookID string) int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if h := l.hooks[webhookID]; h != nil && len(h.recent) > 0 {
		return h.recent[0].GetAtUnixMs()
	}
	return 0
}

// Find returns the newest attempt of a webhook that pred selects, if the
// log still holds one.
func (l *AttemptLog) Find(webhookID string, pred func(*webhooksv1.DeliveryAttempt) bool) *webhooksv1.DeliveryAttempt {
	l.mu.RLock()
	defer l.mu.RUnlock()
	h := l.hooks[webhookID]
	if h == nil {
		return nil
	}
	for i := len(h.recent) - 1; i >= 0; i-- {
		if pred(h.recent[i]) {
			return h.recent[i]
		}
	}
	return nil
}

// Health summarises a webhook's recent non-test attempts.
func (l *AttemptLog) Health(webhookID string) domain.Health {
	l.mu.RLock()
	defer l.mu.RUnlock()
	h := l.hooks[webhookID]
	if h == nil {
		return domain.Health{}
	}
	ok := 0
	for _, s := range h.outcomes {
		if s {
			ok++
		}
	}
	out := domain.Health{
		Attempts: len(h.outcomes), ConsecutiveFailures: h.consecutive,
		LastSuccessUnixMs: h.lastSuccess, LastFailureUnixMs: h.lastFailure, LastError: h.lastError, LastResponseCode: h.lastCode,
	}
	if len(h.outcomes) > 0 {
		out.SuccessRate = float64(ok) / float64(len(h.outcomes))
	}
	return out
}
