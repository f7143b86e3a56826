// Package app holds the webhook use cases: managing webhooks (through the
// aggregate repository over the WEBHOOKS stream), ingesting platform
// events, test deliveries, and the delivery log and health reads.
package app

import (
	"cmp"
	"context"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	events "github.com/voiceai-platform/voiceai/proto-events"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/aggregate"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/cursor"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/services/webhooks/delivery"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// App is the webhooks application.
type App struct {
	Ports
	Webhooks *aggregate.Repo[*webhooksv1.Webhook]
	RelayKey []byte // signs relay tokens
	// TranscriptKeys, when set, seals the transcript a conversation_ended
	// hands over under its conversation's key before it is published
	// (see ingest.go); nil publishes it as sent.
	TranscriptKeys convseal.Keys
	// Cursors signs the delivery log's cursors.
	Cursors *cursor.Codec
	// MaxPerWorkspace bounds a workspace's webhooks (0: no bound). Every
	// event is fanned out to each of them, on the dispatcher all
	// workspaces share.
	MaxPerWorkspace int
	// Stopping, when set, ends as the process begins to stop: a poll
	// waiting for a relay delivery then answers none at once (its client
	// polls again, another replica or this one restarted), so a stop does
	// not wait it out.
	Stopping context.Context
	Log      *slog.Logger
	Now      func() time.Time
}

// Ports are what the use cases run on.
type Ports struct {
	Registry Registry
	Attempts AttemptLog
	History  DeliveryHistory // nil: the log is what Attempts holds
	Backlog  Backlog
	Queue    Queue
	Sender   Sender
	Sealer   Sealer
	Relay    Relay
}

// New is the application over the WEBHOOKS log store; relayKey signs
// relay tokens.
func New(store eventlog.Store, p Ports, relayKey []byte, log *slog.Logger, now func() time.Time) *App {
	return &App{Ports: p, Webhooks: NewRepo(store, p.Registry, log, now), RelayKey: relayKey, Log: log, Now: now}
}

// NewRepo is the webhook repository over the WEBHOOKS log; every change
// is applied to the registry inline.
func NewRepo(store eventlog.Store, reg Registry, log *slog.Logger, now func() time.Time) *aggregate.Repo[*webhooksv1.Webhook] {
	return &aggregate.Repo[*webhooksv1.Webhook]{
		Env:     aggregate.Env{Store: store, Log: log, Now: now},
		Subject: events.WebhookSubject,
		Gone:    func(w *webhooksv1.Webhook) bool { return w.DeletedAtUnix != nil },
		Touch:   func(w *webhooksv1.Webhook, t time.Time) { w.UpdatedAtUnix, w.UpdatedAtUnixMs = t.Unix(), t.UnixMilli() },
		Project: func(_ context.Context, seq uint64, w *webhooksv1.Webhook) error {
			reg.Put(seq, w)
			return nil
		},
		NotFound: apperr.WebhookNotFound,
	}
}

// Get returns a live webhook of the workspace, from memory.
func (a *App) Get(workspaceID, id string) (*webhooksv1.Webhook, error) {
	w, ok := a.Registry.Get(workspaceID, id)
	if !ok {
		return nil, apperr.WebhookNotFound
	}
	return w, nil
}

// List returns the workspace's webhooks, oldest first.
func (a *App) List(workspaceID string) []*webhooksv1.Webhook { return a.Registry.List(workspaceID) }

// MaxWebhookPage is the most webhooks a page lists, and how many it lists
// unless asked for fewer.
const MaxWebhookPage = 100

// WebhookPage is a page of a workspace's webhooks, oldest first.
type WebhookPage struct {
	Webhooks   []*webhooksv1.Webhook
	NextCursor *string
	HasMore    bool
	Total      int // the workspace's webhooks, every page's
}

// CompareListed is the workspace listing's one order, oldest first:
// creation millisecond, then id (Registry.List sorts by it).
func CompareListed(a, b *webhooksv1.Webhook) int {
	return cmp.Or(cmp.Compare(a.GetCreatedAtUnixMs(), b.GetCreatedAtUnixMs()), strings.Compare(a.GetWebhookId(), b.GetWebhookId()))
}

// webhookPosition is where a webhook stands in its workspace's listing.
type webhookPosition struct {
	AtMs int64  `json:"at"`
	ID   string `json:"id"`
}

// placeholder is a webhook standing at p, to compare others with.
func (p webhookPosition) placeholder() *webhooksv1.Webhook {
	return &webhooksv1.Webhook{CreatedAtUnixMs: p.AtMs, WebhookId: p.ID}
}

// ListPage returns up to limit of the workspace's webhooks after the
// place the cursor (from the page before; "" for the first) holds.
func (a *App) ListPage(workspaceID string, limit int, cursorToken string) (WebhookPage, error) {
	scope := cursor.Scope("webhooks", workspaceID)
	after, err := cursor.After[webhookPosition](a.Cursors, scope, cursorToken)
	if err != nil {
		return WebhookPage{}, err
	}
	all := a.Registry.List(workspaceID)
	rest := all
	if after != nil {
		at := after.placeholder()
		rest = all[sort.Search(len(all), func(i int) bool { return CompareListed(all[i], at) > 0 }):]
	}
	page := WebhookPage{Webhooks: rest[:min(len(rest), limit)], Total: len(all)}
	if len(rest) > limit {
		last := page.Webhooks[limit-1]
		page.HasMore = true
		if page.NextCursor, err = cursor.Next(a.Cursors, scope, webhookPosition{AtMs: last.GetCreatedAtUnixMs(), ID: last.GetWebhookId()}); err != nil {
			return WebhookPage{}, err
		}
	}
	return page, nil
}

// PolicyOf reads a webhook's retry policy.
func PolicyOf(w *webhooksv1.Webhook) domain.RetryPolicy {
	rc := w.GetRetryConfig()
	codes := make([]int, 0, len(rc.GetRetryOnStatus()))
	for _, c := range rc.GetRetryOnStatus() {
		codes = append(codes, int(c))
	}
	return domain.RetryPolicy{
		MaxRetries: int(rc.GetMaxRetries()), RetryDelay: int(rc.GetRetryDelay()), ExponentialBackoff: rc.GetExponentialBackoff(),
		MaxDelay: int(rc.GetMaxDelay()), RetryOnStatus: codes,
	}
}

// NotSentInactive is the error of a delivery logged, not sent, for a
// webhook a user deactivated after its event was stored: recover replays
// it.
const NotSentInactive = "not sent: the webhook was deactivated after this event, before its delivery; recover replays it once the webhook is active again"

// NotSent reports whether a is a delivery logged as not sent (NotSentInactive,
// NotSentDisabled): no outcome of the webhook's receiver, so neither its
// health nor its failure run counts it.
func NotSent(a *webhooksv1.DeliveryAttempt) bool {
	return a.GetError() == NotSentInactive || a.GetError() == NotSentDisabled
}

// NotSentDisabled is the error of a delivery logged, not sent, for a
// webhook the dispatcher had disabled: recover replays it.
const NotSentDisabled = "not sent: the webhook was disabled after its deliveries kept failing; recover replays this event once it is enabled"

// NewAttempt is the record of attempt retryCount+1 of delivering eventID
// to w, judged verdict; it is final unless a retry follows. The first
// attempt and the final one carry the request body, what a resend sends
// again: a delivery's first attempt may never be recorded (the webhook's
// secret not opened, the job given back as its replica stopped, which
// counts as an attempt too).
func NewAttempt(job *webhooksv1.DeliveryJob, w *webhooksv1.Webhook, retryCount int, at time.Time, res delivery.Result, verdict domain.Verdict) *webhooksv1.DeliveryAttempt {
	id := job.GetEventId() + ":" + w.GetWebhookId() + ":"
	if job.GetResendId() != "" {
		id += job.GetResendId() + ":"
	}
	a := &webhooksv1.DeliveryAttempt{
		AttemptId: id + strconv.Itoa(retryCount+1),
		EventId:   job.GetEventId(), WorkspaceId: w.GetWorkspaceId(), WebhookId: w.GetWebhookId(), Event: job.GetEvent(),
		AtUnixMs: at.UnixMilli(), Success: verdict == domain.Delivered, ResponseCode: int32(res.Outcome.StatusCode),
		DurationMs: res.Duration.Milliseconds(), RetryCount: int32(retryCount), Error: res.Error, Final: verdict != domain.Retry,
		ResponseBody: strings.ToValidUTF8(string(res.ResponseBody), "\uFFFD"), ResendId: job.GetResendId(),
	}
	if retryCount == 0 || a.Final {
		a.RequestBody = job.GetBody() // retries send the same bytes
	}
	return a
}

func retryConfigOf(p domain.RetryPolicy) *webhooksv1.RetryConfig {
	codes := make([]int32, 0, len(p.RetryOnStatus))
	for _, c := range p.RetryOnStatus {
		codes = append(codes, int32(c))
	}
	return &webhooksv1.RetryConfig{
		MaxRetries: int32(p.MaxRetries), RetryDelay: int32(p.RetryDelay), ExponentialBackoff: p.ExponentialBackoff,
		MaxDelay: int32(p.MaxDelay), RetryOnStatus: codes,
	}
}

func specOf(w *webhooksv1.Webhook) domain.Spec {
	return domain.Spec{URL: w.GetUrl(), Events: slices.Clone(w.GetEvents()), Active: w.GetActive(), Retry: PolicyOf(w), Relay: w.GetRelay(),
		Name: w.GetName(), Headers: maps.Clone(w.GetRequestHeaders())}
}
