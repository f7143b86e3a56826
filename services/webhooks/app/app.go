// Package app holds the webhook use cases: managing webhooks (through the
// aggregate repository over the WEBHOOKS stream), ingesting platform
// events, test deliveries, and the delivery log and health reads.
package app

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/aggregate"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/seal"
	"github.com/voiceai-platform/voiceai/services/webhooks/adapters"
	"github.com/voiceai-platform/voiceai/services/webhooks/delivery"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// App is the webhooks application.
type App struct {
	Webhooks *aggregate.Repo[*webhooksv1.Webhook]
	Registry *adapters.Registry
	Attempts *adapters.AttemptLog
	History  DeliveryHistory // nil: the log is what memory holds
	Backlog  Backlog
	RelayKey []byte // signs relay tokens
	Sealer   *seal.Sealer
	Sender   *delivery.Sender
	JS       jetstream.JetStream
	Log      *slog.Logger
	Now      func() time.Time
}

// DeliveryHistory is the durable delivery log: every attempt, beyond what
// the in-memory log keeps.
type DeliveryHistory interface {
	// Older returns up to limit attempts of a webhook that f selects,
	// made before beforeMs (0: any time), newest first.
	Older(ctx context.Context, webhookID string, f domain.LogFilter, beforeMs int64, limit int) ([]*webhooksv1.DeliveryAttempt, error)
	// FirstAttempt returns the first attempt of a delivery, or nil.
	FirstAttempt(ctx context.Context, webhookID, deliveryID string) (*webhooksv1.DeliveryAttempt, error)
}

// Backlog counts the deliveries waiting (scheduled retries included).
type Backlog interface {
	// Waiting is, per webhook id of the workspace, its deliveries waiting.
	Waiting(ctx context.Context, workspaceID string) (map[string]uint64, error)
}

// NewRepo is the webhook repository over the WEBHOOKS log; every change
// is applied to the registry inline.
func NewRepo(store eventlog.Store, reg *adapters.Registry, log *slog.Logger, now func() time.Time) *aggregate.Repo[*webhooksv1.Webhook] {
	return &aggregate.Repo[*webhooksv1.Webhook]{
		Store:   store,
		Subject: events.WebhookSubject,
		StateOf: func(m proto.Message) (*webhooksv1.Webhook, bool) {
			w := adapters.StateOf(m)
			return w, w != nil
		},
		Gone:  func(w *webhooksv1.Webhook) bool { return w.DeletedAtUnix != nil },
		Touch: func(w *webhooksv1.Webhook, t time.Time) { w.UpdatedAtUnix = t.Unix() },
		Project: func(_ context.Context, seq uint64, w *webhooksv1.Webhook) error {
			reg.Put(seq, w)
			return nil
		},
		NotFound: apperr.WebhookNotFound,
		Conflict: apperr.ConcurrentUpdate,
		Log:      log,
		Now:      now,
	}
}

func (a *App) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
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

// NewAttempt is the record of attempt retryCount+1 of delivering eventID
// to w, judged verdict; it is final unless a retry follows.
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
	if retryCount == 0 {
		a.RequestBody = job.GetBody() // retries send the same bytes
	}
	return a
}

// Deliver makes one attempt of r to w: an HTTP POST, or for a relay
// webhook a hand-over to the client polling for its deliveries.
func Deliver(ctx context.Context, s *delivery.Sender, nc *nats.Conn, w *webhooksv1.Webhook, r delivery.Request) delivery.Result {
	if w.GetRelay() {
		return delivery.Relay{NC: nc, Timeout: s.Timeout()}.Send(ctx, w.GetWorkspaceId(), r)
	}
	return s.Send(ctx, r)
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
	return domain.Spec{URL: w.GetUrl(), Events: slices.Clone(w.GetEvents()), Active: w.GetActive(), Retry: PolicyOf(w), Relay: w.GetRelay()}
}
