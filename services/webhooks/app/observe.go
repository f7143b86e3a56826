package app

import (
	"context"
	"encoding/json"
	"slices"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/ids"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/pkg/wire"
	"github.com/voiceai-platform/voiceai/services/webhooks/delivery"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// Limits of the logs endpoint's limit parameter.
const (
	DefaultLogLimit = 50
	MaxLogLimit     = 100 // what the AttemptLog keeps of each webhook
)

// Test sends one real, signed delivery of eventType (an event name, as
// the schema, WebhookTest, says) with a sample payload to the webhook,
// now, and reports the outcome (it is not retried). It is
// recorded in the delivery log, marked as a test, and left out of health.
func (a *App) Test(ctx context.Context, p principal.Caller, id, eventType string) (*webhooksv1.DeliveryAttempt, error) {
	w, err := a.Get(p.WorkspaceID, id)
	if err != nil {
		return nil, err
	}
	secret, err := a.Sealer.Open(w.GetWebhookId(), w.GetSecretSealed())
	if err != nil {
		return nil, err
	}
	now := a.Now()
	body, err := json.Marshal(wire.Envelope{Event: eventType, Timestamp: wire.FormatTimestamp(now), Data: domain.SampleData(eventType)})
	if err != nil {
		return nil, err
	}
	eventID := ids.New("evt")
	res := a.Sender.Send(ctx, w, delivery.Request{
		URL: w.GetUrl(), Secret: secret, Body: body, Event: eventType, EventID: eventID, WebhookID: w.GetWebhookId(), Attempt: 1,
		Extra: w.GetRequestHeaders(),
	})
	verdict := PolicyOf(w).Decide(res.Outcome, 0)
	att := NewAttempt(&webhooksv1.DeliveryJob{EventId: eventID, Event: eventType, Body: body}, w, 0, now, res, verdict)
	att.Final, att.Test = true, true // a test is never retried
	if err := a.Attempts.Record(ctx, att); err != nil {
		a.Log.WarnContext(ctx, "test attempt not recorded", "webhook_id", w.GetWebhookId(), "err", err)
	}
	return att, nil
}

// Logs returns a webhook's newest attempts that f selects, newest first:
// from memory, then, when memory has too few, from the durable log.
func (a *App) Logs(ctx context.Context, workspaceID, id string, f domain.LogFilter, limit int) ([]*webhooksv1.DeliveryAttempt, error) {
	if _, err := a.Get(workspaceID, id); err != nil {
		return nil, err
	}
	out, oldest := a.Attempts.Recent(id, f, limit)
	if len(out) == limit || a.History == nil {
		return out, nil
	}
	// The durable log is read from the oldest millisecond memory holds
	// on, not before it: memory may have let go of some attempts of that
	// millisecond and kept others.
	before, held := oldest, 0
	if oldest != 0 {
		before = oldest + 1
		for _, x := range out {
			if x.GetAtUnixMs() == oldest {
				held++
			}
		}
	}
	older, err := a.History.Older(ctx, id, f, before, limit-len(out)+held)
	if err != nil {
		return nil, err
	}
	for _, x := range older {
		if !slices.ContainsFunc(out, func(y *webhooksv1.DeliveryAttempt) bool { return y.GetAttemptId() == x.GetAttemptId() }) {
			out = append(out, x)
		}
	}
	return out[:min(len(out), limit)], nil
}

// HealthRow is the health of one webhook.
type HealthRow struct {
	Webhook *webhooksv1.Webhook
	Health  domain.Health
	Backlog uint64
}

// Health reports every webhook of the workspace: recent success rate,
// consecutive failures, last success and failure, disabled state, and
// the backlog of deliveries waiting (including scheduled retries).
func (a *App) Health(ctx context.Context, workspaceID string) ([]HealthRow, error) {
	hooks := a.Registry.List(workspaceID)
	backlog := map[string]uint64{}
	if len(hooks) > 0 {
		var err error
		if backlog, err = a.Backlog.Waiting(ctx, workspaceID); err != nil {
			return nil, err
		}
	}
	out := make([]HealthRow, 0, len(hooks))
	for _, w := range hooks {
		out = append(out, HealthRow{Webhook: w, Health: a.Attempts.Health(w.GetWebhookId()), Backlog: backlog[w.GetWebhookId()]})
	}
	return out, nil
}
