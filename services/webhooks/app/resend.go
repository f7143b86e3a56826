package app

import (
	"context"
	"errors"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/ids"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/pkg/tracing"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// MaxRecover bounds the deliveries one recover call resends.
const MaxRecover = 1000

// Resent is a delivery queued again.
type Resent struct {
	DeliveryID string // the new delivery's id
	EventID    string
	Event      string
}

// Resend queues the event of one of the webhook's deliveries again, with
// the same body and event id (receivers that deduplicate on it see a
// duplicate, as they would a retry). It is a new delivery, with its own
// attempts and retries under the webhook's current policy. The same
// commandID (an Idempotency-Key) queues it once.
func (a *App) Resend(ctx context.Context, p principal.Caller, webhookID, deliveryID string) (Resent, error) {
	commandID := p.CommandID
	w, err := a.Get(p.WorkspaceID, webhookID)
	if err != nil {
		return Resent{}, err
	}
	first, err := a.firstAttempt(ctx, webhookID, deliveryID)
	if err != nil {
		return Resent{}, err
	}
	if !w.GetActive() {
		return Resent{}, apperr.WebhookInactive
	}
	return a.queue(ctx, w, first, commandID)
}

// firstAttempt finds the attempt of a delivery that holds its body: in
// memory, else in the durable log.
func (a *App) firstAttempt(ctx context.Context, webhookID, deliveryID string) (*webhooksv1.DeliveryAttempt, error) {
	att := a.Attempts.Find(webhookID, func(x *webhooksv1.DeliveryAttempt) bool { return HoldsBodyOf(x, deliveryID) })
	if att == nil && a.History != nil {
		var err error
		if att, err = a.History.FirstAttempt(ctx, webhookID, deliveryID); err != nil {
			return nil, err
		}
	}
	if att == nil || att.GetTest() || len(att.GetRequestBody()) == 0 {
		return nil, apperr.DeliveryNotFound
	}
	return att, nil
}

// queue publishes a delivery job for the event of att, deduplicated by
// its resend id.
func (a *App) queue(ctx context.Context, w *webhooksv1.Webhook, att *webhooksv1.DeliveryAttempt, commandID string) (Resent, error) {
	resendID := ids.New("rsd")
	if commandID != "" {
		resendID = "rsd_" + esproto.StableID("resend", commandID+"\x00"+DeliveryID(att))
	}
	job := &webhooksv1.DeliveryJob{
		EventId: att.GetEventId(), WorkspaceId: w.GetWorkspaceId(), WebhookId: w.GetWebhookId(), Event: att.GetEvent(),
		Body: att.GetRequestBody(), PublishedAtUnixMs: a.Now().UnixMilli(), ResendId: resendID,
	}
	if err := a.Queue.QueueDelivery(ctx, Queued{Job: job, Traceparent: tracing.RequestTrace(ctx)}); err != nil {
		return Resent{}, err
	}
	next := &webhooksv1.DeliveryAttempt{EventId: job.GetEventId(), WebhookId: job.GetWebhookId(), ResendId: resendID}
	return Resent{DeliveryID: DeliveryID(next), EventID: job.GetEventId(), Event: job.GetEvent()}, nil
}

// Recover resends every delivery of the webhook that failed for good in
// [f.FromMs, f.ToMs) and whose event no delivery to it delivered since
// f.FromMs (a resend that succeeded while the original went on failing
// included), each event once, at most MaxRecover; more reports that
// others remain (call again with from after the last one).
func (a *App) Recover(ctx context.Context, p principal.Caller, webhookID string, f domain.LogFilter) (out []Resent, more bool, err error) {
	commandID := p.CommandID
	w, err := a.Get(p.WorkspaceID, webhookID)
	if err != nil {
		return nil, false, err
	}
	if !w.GetActive() {
		return nil, false, apperr.WebhookInactive
	}
	// Newest first: the first attempt seen of an event is its latest.
	window := domain.LogFilter{FromMs: f.FromMs}
	atts, err := a.logs(ctx, webhookID, window, nil, 10*MaxRecover)
	if err != nil {
		return nil, false, err
	}
	// The first attempts the window holds: most of what is resent is
	// among them, with no lookup of its own.
	firsts := map[string]*webhooksv1.DeliveryAttempt{}
	delivered := map[string]bool{} // events some delivery delivered, before or after a failure
	for _, att := range atts {
		if id := DeliveryID(att); HoldsBodyOf(att, id) && !att.GetTest() && FirstOf(att, id, firsts[id]) {
			firsts[id] = att
		}
		if att.GetSuccess() && !att.GetTest() {
			delivered[att.GetEventId()] = true
		}
	}
	seen := map[string]bool{}
	for _, att := range atts {
		if seen[att.GetEventId()] || att.GetTest() {
			continue
		}
		seen[att.GetEventId()] = true
		if delivered[att.GetEventId()] || !att.GetFinal() || !f.Matches(att.GetEvent(), false, att.GetAtUnixMs()) {
			continue // delivered, still being retried, or outside the range
		}
		if len(out) == MaxRecover {
			return out, true, nil
		}
		first := firsts[DeliveryID(att)]
		if first == nil {
			first, err = a.firstAttempt(ctx, webhookID, DeliveryID(att))
			if errors.Is(err, apperr.DeliveryNotFound) {
				continue // its body is no longer kept
			}
			if err != nil {
				return out, false, err
			}
		}
		r, err := a.queue(ctx, w, first, commandID)
		if err != nil {
			return out, false, err
		}
		out = append(out, r)
	}
	return out, false, nil
}
