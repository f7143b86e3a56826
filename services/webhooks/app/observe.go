package app

import (
	"context"
	"encoding/json"
	"slices"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/cursor"
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

// LogPage is a page of a webhook's delivery log.
type LogPage struct {
	Attempts   []*webhooksv1.DeliveryAttempt // newest first
	NextCursor *string                       // the page after it; nil on the last
	HasMore    bool
}

// Logs returns a page of a webhook's attempts that f selects, newest
// first, below the place the cursor (from the page before; "" for the
// first) holds.
func (a *App) Logs(ctx context.Context, workspaceID, id string, f domain.LogFilter, limit int, cursorToken string) (LogPage, error) {
	if _, err := a.Get(workspaceID, id); err != nil {
		return LogPage{}, err
	}
	// A cursor is a place in the webhook's log, which has one order:
	// whatever filters the next page asks for, it lists what stands below.
	// So a time window taken from the clock (the CLI's --since) may move
	// between pages.
	scope := cursor.Scope("webhook-logs", workspaceID, id)
	after, err := cursor.After[LogPosition](a.Cursors, scope, cursorToken)
	if err != nil {
		return LogPage{}, err
	}
	atts, err := a.logs(ctx, id, f, after, limit+1)
	if err != nil {
		return LogPage{}, err
	}
	page := LogPage{Attempts: atts[:min(len(atts), limit)]}
	if len(atts) > limit {
		page.HasMore = true
		if page.NextCursor, err = cursor.Next(a.Cursors, scope, PositionOf(atts[limit-1])); err != nil {
			return LogPage{}, err
		}
	}
	return page, nil
}

// logs returns up to n of a webhook's attempts that f selects, below
// position after (nil: from the newest), newest first: those memory holds
// and, where they are too few, the durable log's below them. Memory
// holds every attempt made after its oldest, and may have let go of some
// of that millisecond: the durable log is read from the top of it (or
// from after, if lower), each attempt listed once.
func (a *App) logs(ctx context.Context, id string, f domain.LogFilter, after *LogPosition, n int) ([]*webhooksv1.DeliveryAttempt, error) {
	var out []*webhooksv1.DeliveryAttempt
	for _, x := range a.Attempts.Recent(id, f, MaxLogLimit) { // every one held (AttemptLog)
		if after == nil || after.Below(x) {
			out = append(out, x)
		}
	}
	slices.SortFunc(out, NewestFirst)
	if len(out) >= n || a.History == nil {
		return out[:min(len(out), n)], nil
	}
	from := after
	if since := a.Attempts.HeldSince(id); since != 0 && (from == nil || from.AtMs > since) {
		from = &LogPosition{AtMs: since + 1} // above every attempt of that millisecond
	}
	again := 0 // of what memory listed, what the durable log lists too
	for _, x := range out {
		if from != nil && from.Below(x) {
			again++
		}
	}
	older, err := a.History.Older(ctx, id, f, from, n-len(out)+again)
	if err != nil {
		return nil, err
	}
	for _, x := range older {
		if !slices.ContainsFunc(out, func(y *webhooksv1.DeliveryAttempt) bool { return y.GetAttemptId() == x.GetAttemptId() }) {
			out = append(out, x)
		}
	}
	slices.SortFunc(out, NewestFirst)
	return out[:min(len(out), n)], nil
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
