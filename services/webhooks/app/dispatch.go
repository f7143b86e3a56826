package app

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/aggregate"
	"github.com/voiceai-platform/voiceai/pkg/tracing"
	"github.com/voiceai-platform/voiceai/services/webhooks/delivery"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// Dispatch holds the dispatcher's use cases: fanning an event out to the
// webhooks subscribed to it (Fanout and the event mappings of
// fanout_events.go) and making one attempt of a delivery job (Deliver).
// They run on ports alone; package dispatcher drives them from the
// streams and settles each message as the use case says (Handled).
type Dispatch struct {
	Subscriptions Subscriptions
	Queue         Queue
	Attempts      AttemptRecorder
	Sender        Sender
	Sealer        Sealer
	// Webhooks writes WebhookDisabled when a receiver answers 410 Gone.
	Webhooks *aggregate.Repo[*webhooksv1.Webhook]
	Log      *slog.Logger
	Now      func() time.Time
	// TimeUnit is the length of one retry_config second (default 1s;
	// tests shorten it).
	TimeUnit time.Duration
	// Share bounds each workspace's deliveries waiting (nil: no bound).
	Share *WorkspaceShare
	// Turns shares the replica's workers out between workspaces (nil:
	// first come, first served).
	Turns *Turns
}

// Next is what becomes of a handled message.
type Next int

const (
	// Done: handled; never delivered again.
	Done Next = iota
	// RetryLater: delivered again after Handled.After.
	RetryLater
	// Drop: given up for good (undeliverable, retries exhausted).
	Drop
)

// Delivery results, as the dispatcher counts its attempts.
const (
	ResultDelivered = "delivered"
	ResultRetry     = "retry"
	ResultFailed    = "failed"
	ResultGone      = "gone"
	ResultDropped   = "dropped"  // the webhook was deleted or deactivated
	ResultDeferred  = "deferred" // put back to wait for its workspace's turn (Turns)
)

// Handled is a use case's verdict on the message it was given.
type Handled struct {
	Next  Next
	After time.Duration // RetryLater's delay
	// Result is a delivery's outcome (Result* constants; "": no attempt
	// was counted), and Took how long its attempt took (0: none made).
	Result string
	Took   time.Duration
}

func done() Handled                        { return Handled{Next: Done} }
func retryAfter(d time.Duration) Handled   { return Handled{Next: RetryLater, After: d} }
func drop() Handled                        { return Handled{Next: Drop} }
func (h Handled) counted(r string) Handled { h.Result = r; return h }

// fanoutRetry is how soon a fan-out that could not be stored is tried
// again.
const fanoutRetry = time.Second

// FanoutEvent is an event as webhooks name it, ready to fan out.
type FanoutEvent struct {
	WorkspaceID string
	Name        string // its public name: "call_ended", "ticket_created"...
	// ID is the event's id, the same on every redelivery: it names the
	// jobs, so a redelivered event queues nothing twice.
	ID       string
	StoredAt time.Time
	// Traceparent is the trace the event's deliveries continue ("":
	// none).
	Traceparent string
	// Body encodes the envelope a receiver gets; called only when some
	// webhook wants the event (most events of a busy workspace match
	// none).
	Body func() ([]byte, error)
}

// FanoutBatch fans out the events a consumer handed over at once (Fanout)
// and, when their jobs could not all be stored, each on its own. It
// returns the indices of the events that failed again, to be delivered
// again: an event whose jobs can never be stored holds up no other.
func (d *Dispatch) FanoutBatch(ctx context.Context, evs []FanoutEvent) (retry []int) {
	if len(evs) == 0 || d.Fanout(ctx, evs...).Next != RetryLater {
		return nil
	}
	if len(evs) == 1 {
		return []int{0}
	}
	for i, e := range evs {
		if ctx.Err() != nil || d.Fanout(ctx, e).Next == RetryLater {
			retry = append(retry, i)
		}
	}
	return retry
}

// Fanout queues one delivery job per active webhook of the workspace
// subscribed to each event (which existed when it was stored), and logs
// an event as not sent for each one the dispatcher disabled, which
// recover replays once it is enabled again. The jobs of all the events
// are queued at once, in the events' order: a consumer hands over what
// has arrived and waits for the stream once. Done once every job is
// stored; a failure to store is retried (all of them: nothing is queued
// twice); an event that cannot be encoded is dropped, and when it was
// the only one, so is the fan-out.
func (d *Dispatch) Fanout(ctx context.Context, evs ...FanoutEvent) Handled {
	var latest time.Time
	for _, e := range evs {
		if e.StoredAt.After(latest) {
			latest = e.StoredAt
		}
	}
	if err := d.Subscriptions.WaitCurrent(ctx, latest); err != nil {
		return retryAfter(fanoutRetry)
	}
	var jobs []Queued
	dropped := 0
	for _, e := range evs {
		hooks, missed := d.Subscriptions.Match(e.WorkspaceID, e.Name, e.StoredAt), d.Subscriptions.MatchMissed(e.WorkspaceID, e.Name, e.StoredAt)
		if len(hooks) == 0 && len(missed) == 0 {
			continue
		}
		body, err := e.Body()
		if err != nil {
			d.Log.ErrorContext(ctx, "event cannot be encoded; not delivered", "event_id", e.ID, "err", err)
			dropped++
			continue
		}
		job := func(w *webhooksv1.Webhook) *webhooksv1.DeliveryJob {
			return &webhooksv1.DeliveryJob{EventId: e.ID, WorkspaceId: e.WorkspaceID, WebhookId: w.GetWebhookId(), Event: e.Name, Body: body,
				PublishedAtUnixMs: e.StoredAt.UnixMilli()}
		}
		// notSent logs the event's delivery to w as failed for good, why
		// saying so; recover replays it.
		notSent := func(w *webhooksv1.Webhook, why string) bool {
			att := NewAttempt(job(w), w, 0, d.Now(), delivery.Result{Error: why}, domain.GiveUp)
			if err := d.Attempts.RecordDurable(ctx, att); err != nil {
				d.Log.WarnContext(ctx, "fan-out failed; the event will be redelivered", "event_id", e.ID, "err", err)
				return false
			}
			return true
		}
		for _, w := range missed {
			if !notSent(w, NotSentDisabled) {
				return retryAfter(fanoutRetry)
			}
		}
		// A workspace with its share of the queue waiting queues no more:
		// its deliveries would wait behind its own backlog anyway, and every
		// other workspace's would wait behind them.
		crowded := len(hooks) > 0 && d.Share.Full(ctx, e.WorkspaceID, d.Now())
		for _, w := range hooks {
			if !crowded {
				jobs = append(jobs, Queued{Job: job(w), Traceparent: e.Traceparent})
			} else if !notSent(w, NotQueuedCrowded) {
				return retryAfter(fanoutRetry)
			}
		}
	}
	if len(jobs) > 0 {
		if err := d.Queue.QueueDelivery(ctx, jobs...); err != nil {
			d.Log.WarnContext(ctx, "fan-out failed; the events will be redelivered", "events", len(evs), "first_event_id", evs[0].ID, "err", err)
			return retryAfter(fanoutRetry)
		}
	}
	if dropped > 0 && dropped == len(evs) {
		return drop()
	}
	return done()
}

// secretRetry is how soon a job whose webhook secret cannot be opened is
// tried again.
const secretRetry = 30 * time.Second

// catchUpWait bounds waiting for the registry to catch up with a webhook
// created elsewhere.
const catchUpWait = 10 * time.Second

// goneTimeout bounds writing that a webhook's receiver is gone.
const goneTimeout = 10 * time.Second

// Taken is a delivery job as the queue handed it over.
type Taken struct {
	Queued
	// Delivered counts the times this copy of the job was handed over (1:
	// the first): its attempt is AttemptsMade+Delivered.
	Delivered int
	// Copy names this copy of the job, for Deferral.Key.
	Copy string
}

// Deliver makes attempt number attempt (1: the first) of job and says
// what becomes of it, as DeliverTaken does.
func (d *Dispatch) Deliver(ctx context.Context, job *webhooksv1.DeliveryJob, attempt int) Handled {
	return d.DeliverTaken(ctx, Taken{Queued: Queued{Job: job}, Delivered: attempt})
}

// DeliverTaken makes the next attempt of a job taken from the queue and
// says what becomes of it: Done when delivered, or put back to wait for
// its workspace's turn (Turns), RetryLater on the webhook's retry
// schedule, Drop when given up, the receiver is gone (410: the webhook is
// disabled) or the webhook was deleted or deactivated. Every attempt is
// recorded. ctx should outlive the dispatcher's stopping: an attempt
// under way finishes (the Sender bounds it).
func (d *Dispatch) DeliverTaken(ctx context.Context, t Taken) Handled {
	job, attempt := t.Job, t.AttemptsMade+t.Delivered
	w, ok := d.Subscriptions.Get(job.GetWorkspaceId(), job.GetWebhookId())
	if !ok && !d.Subscriptions.Known(job.GetWebhookId()) {
		// Created on another replica a moment ago? Catch up once. (Jobs of
		// a deleted webhook skip this: it stays deleted.) Bounded: ctx
		// outlives the replica's stopping.
		wctx, cancel := context.WithTimeout(ctx, catchUpWait)
		_ = d.Subscriptions.CatchUp(wctx)
		cancel()
		w, ok = d.Subscriptions.Get(job.GetWorkspaceId(), job.GetWebhookId())
	}
	if ok && !w.GetActive() {
		// Disabled by the dispatcher (its deliveries kept failing, its
		// receiver gone), or deactivated by a user after the event was
		// stored: logged as not sent, as the fan-out logs what comes
		// after a disabling, so that recover replays it once it is active.
		why := NotSentInactive
		if w.GetDisabledReason() != "" {
			why = NotSentDisabled
		}
		att := NewAttempt(job, w, attempt-1, d.Now(), delivery.Result{Error: why}, domain.GiveUp)
		if err := d.Attempts.RecordDurable(ctx, att); err != nil {
			d.Log.WarnContext(ctx, "a delivery to an inactive webhook could not be logged; retrying later", "webhook_id", w.GetWebhookId(), "err", err)
			return retryAfter(fanoutRetry)
		}
		return drop().counted(ResultDropped)
	}
	if !ok {
		return drop().counted(ResultDropped) // deleted: its pending deliveries go with it
	}
	release, turn := d.Turns.Take(ctx, w.GetWorkspaceId(), d.Now())
	defer release()
	if !turn {
		if h, waits := d.waitTurn(ctx, t, attempt-1); waits {
			return h
		}
	}
	secret, err := d.Sealer.Open(w.GetWebhookId(), w.GetSecretSealed())
	if err != nil {
		d.Log.ErrorContext(ctx, "cannot open the webhook secret; retrying later", "webhook_id", w.GetWebhookId(), "err", err)
		return retryAfter(secretRetry)
	}
	retryCount := attempt - 1
	// The attempt is a client span of the event's trace, passed on to the
	// receiver.
	sctx, span := tracing.Start(ctx, "", "webhook delivery", trace.SpanKindClient)
	if span.IsRecording() { // attributes made for a span nobody records are made for nothing, every delivery
		span.SetAttributes(attribute.String("voiceai.webhook_id", w.GetWebhookId()), attribute.String("voiceai.event", job.GetEvent()),
			attribute.Int("voiceai.attempt", attempt))
	}
	res := d.Sender.Send(sctx, w, delivery.Request{
		URL: w.GetUrl(), Secret: secret, Body: job.GetBody(), Event: job.GetEvent(), EventID: job.GetEventId(),
		WebhookID: w.GetWebhookId(), Attempt: attempt, Traceparent: tracing.Traceparent(sctx), Extra: w.GetRequestHeaders(),
	})
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("http.response.status_code", res.Outcome.StatusCode))
		if res.Error != "" {
			span.SetStatus(codes.Error, res.Error)
		}
	}
	span.End()

	policy := PolicyOf(w)
	verdict := policy.Decide(res.Outcome, retryCount)
	now := d.Now()
	crowded := verdict == domain.Retry && d.Share.Full(ctx, w.GetWorkspaceId(), now)
	if crowded {
		verdict = domain.GiveUp
	}
	att := NewAttempt(job, w, retryCount, now, res, verdict)
	if crowded {
		att.Error = strings.TrimPrefix(att.Error+"; "+NotRetriedCrowded, "; ")
	}
	var delay time.Duration
	if verdict == domain.Retry {
		delay = policy.Delay(retryCount, res.Outcome.RetryAfter, d.timeUnit(), nil)
		att.NextAttemptAtUnixMs = now.Add(delay).UnixMilli()
	}
	if err := d.Attempts.Record(sctx, att); err != nil {
		d.Log.WarnContext(ctx, "attempt not recorded", "attempt_id", att.GetAttemptId(), "err", err)
	}
	var out Handled
	switch verdict {
	case domain.Delivered:
		out = done().counted(ResultDelivered)
	case domain.Retry:
		out = retryAfter(delay).counted(ResultRetry)
	case domain.Gone:
		d.disableGone(ctx, w, int32(res.Outcome.StatusCode))
		out = drop().counted(ResultGone)
	default:
		out = drop().counted(ResultFailed)
	}
	out.Took = res.Duration
	return out
}

// waitTurn puts t back in the queue to wait for its workspace's turn,
// with the attempts made of it so far. When it cannot be, the job is
// attempted now, beyond the share, rather than lost or an attempt spent.
func (d *Dispatch) waitTurn(ctx context.Context, t Taken, made int) (Handled, bool) {
	back := t.Queued
	back.AttemptsMade, back.Deferrals = made, t.Deferrals+1
	at := d.Now().Add(turnWait(back.Deferrals, d.timeUnit()))
	if err := d.Queue.Defer(ctx, Deferral{Queued: back, At: at, Key: t.Copy}); err != nil {
		d.Log.WarnContext(ctx, "a delivery could not wait for its workspace's turn; attempted now", "webhook_id", t.Job.GetWebhookId(), "err", err)
		return Handled{}, false
	}
	return done().counted(ResultDeferred), true
}

func (d *Dispatch) timeUnit() time.Duration {
	if d.TimeUnit <= 0 {
		return time.Second
	}
	return d.TimeUnit
}

// disableGone deactivates a webhook whose receiver answered 410 Gone: a
// WebhookDisabled event every replica sees.
func (d *Dispatch) disableGone(ctx context.Context, w *webhooksv1.Webhook, code int32) {
	ctx, cancel := context.WithTimeout(ctx, goneTimeout)
	defer cancel()
	if err := DisableGone(ctx, d.Webhooks, w, code, d.Now()); err != nil {
		d.Log.ErrorContext(ctx, "could not disable a webhook whose receiver is gone", "webhook_id", w.GetWebhookId(), "err", err)
		return
	}
	d.Log.InfoContext(ctx, "webhook disabled: the receiver answered 410 Gone", "webhook_id", w.GetWebhookId(), "workspace_id", w.GetWorkspaceId())
}
