package dispatcher

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/tracing"

	"github.com/voiceai-platform/voiceai/services/webhooks/adapters"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/delivery"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

func (d *Dispatcher) startDelivery() error {
	return d.consume(events.WebhookDeliveriesStream, DeliverDurable, events.WebhookDeliveriesAll, d.opts.MaxAckPending, d.opts.Workers, func(m jetstream.Msg) {
		select {
		case d.slots <- struct{}{}:
		case <-d.ctx.Done():
			return
		}
		if !d.track() {
			<-d.slots
			return
		}
		go func() {
			defer func() { <-d.slots; d.wg.Done() }()
			d.deliver(m)
		}()
	})
}

// deliver makes one attempt of a job and settles it: ack when delivered,
// NakWithDelay to schedule a retry, Term when given up or undeliverable.
func (d *Dispatcher) deliver(m jetstream.Msg) {
	meta, err := m.Metadata()
	if err != nil {
		return
	}
	// In-flight attempts finish even when the replica is stopping; the
	// sender bounds each by the attempt time-out. What is logged about the
	// job names the event's trace.
	ctx := traceOf(context.WithoutCancel(d.ctx), m)
	var job webhooksv1.DeliveryJob
	if err := proto.Unmarshal(m.Data(), &job); err != nil {
		d.Log.ErrorContext(ctx, "delivery job undecodable; dropped", "seq", meta.Sequence.Stream, "err", err)
		_ = m.Term()
		return
	}
	w, ok := d.Registry.Get(job.GetWorkspaceId(), job.GetWebhookId())
	if !ok && !d.Registry.Known(job.GetWebhookId()) {
		// Created on another replica a moment ago? Catch up once. (Jobs of
		// a deleted webhook skip this stream request: it stays deleted.)
		_ = d.Registry.WaitCurrent(d.ctx, time.Now())
		w, ok = d.Registry.Get(job.GetWorkspaceId(), job.GetWebhookId())
	}
	if !ok || !w.GetActive() {
		d.metrics.attempts.WithLabelValues("dropped").Inc()
		_ = m.Term() // deleted or deactivated: its pending deliveries are dropped
		return
	}
	secret, err := d.Sealer.Open(w.GetWebhookId(), w.GetSecretSealed())
	if err != nil {
		d.Log.ErrorContext(ctx, "cannot open the webhook secret; retrying later", "webhook_id", w.GetWebhookId(), "err", err)
		_ = m.NakWithDelay(30 * time.Second)
		return
	}
	attempt := int(meta.NumDelivered)
	retryCount := attempt - 1
	// The attempt is a client span of the event's trace, passed on to the
	// receiver.
	ctx, span := tracing.Start(ctx, "", "webhook delivery", trace.SpanKindClient,
		trace.WithAttributes(attribute.String("voiceai.webhook_id", w.GetWebhookId()), attribute.String("voiceai.event", job.GetEvent()),
			attribute.Int("voiceai.attempt", attempt)))
	res := d.Sender.Send(ctx, w, delivery.Request{
		URL: w.GetUrl(), Secret: secret, Body: job.GetBody(), Event: job.GetEvent(), EventID: job.GetEventId(),
		WebhookID: w.GetWebhookId(), Attempt: attempt, Traceparent: tracing.Traceparent(ctx), Extra: w.GetRequestHeaders(),
	})
	span.SetAttributes(attribute.Int("http.response.status_code", res.Outcome.StatusCode))
	if res.Error != "" {
		span.SetStatus(codes.Error, res.Error)
	}
	span.End()
	d.metrics.duration.Observe(res.Duration.Seconds())
	policy := app.PolicyOf(w)
	verdict := policy.Decide(res.Outcome, retryCount)
	now := d.Repo.Now() // the process's clock, as the webhook's events
	att := app.NewAttempt(&job, w, retryCount, now, res, verdict)
	var delay time.Duration
	if verdict == domain.Retry {
		delay = policy.Delay(retryCount, res.Outcome.RetryAfter, d.opts.TimeUnit, nil)
		att.NextAttemptAtUnixMs = now.Add(delay).UnixMilli()
	}
	if _, err := adapters.PublishAttempt(d.JS, att); err != nil {
		d.Log.WarnContext(ctx, "attempt not recorded", "attempt_id", att.GetAttemptId(), "err", err)
	}
	switch verdict {
	case domain.Delivered:
		d.metrics.attempts.WithLabelValues("delivered").Inc()
		_ = m.Ack()
	case domain.Retry:
		d.metrics.attempts.WithLabelValues("retry").Inc()
		_ = m.NakWithDelay(delay)
	case domain.Gone:
		d.metrics.attempts.WithLabelValues("gone").Inc()
		d.disable(ctx, w, int32(res.Outcome.StatusCode))
		_ = m.Term()
	default:
		d.metrics.attempts.WithLabelValues("failed").Inc()
		_ = m.Term()
	}
}

// disable deactivates a webhook whose receiver answered 410 Gone: a
// WebhookDisabled event on WEBHOOKS, seen by every replica. ctx is the
// attempt's (it outlives the replica's stopping).
func (d *Dispatcher) disable(ctx context.Context, w *webhooksv1.Webhook, code int32) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := app.DisableGone(ctx, d.Repo, w, code, d.Repo.Now()); err != nil {
		d.Log.ErrorContext(ctx, "could not disable a webhook whose receiver is gone", "webhook_id", w.GetWebhookId(), "err", err)
		return
	}
	d.Log.InfoContext(ctx, "webhook disabled: the receiver answered 410 Gone", "webhook_id", w.GetWebhookId(), "workspace_id", w.GetWorkspaceId())
}

// traceOf is ctx carrying the trace m's traceparent names, so what is
// logged about m names it.
func traceOf(ctx context.Context, m jetstream.Msg) context.Context {
	return tracing.Extract(ctx, m.Headers().Get(events.HeaderTraceparent))
}
