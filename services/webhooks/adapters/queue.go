package adapters

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/tracing"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
)

// streamMsg is a message of the webhooks' streams on subject: data, with
// the workspace and the event it is about in its headers.
func streamMsg(subject string, data []byte, workspaceID, eventID string) *nats.Msg {
	msg := nats.NewMsg(subject)
	msg.Data = data
	msg.Header.Set(events.HeaderWorkspaceID, workspaceID)
	msg.Header.Set(events.HeaderEventID, eventID)
	return msg
}

// protoMsg is streamMsg with m, marshalled, as its data.
func protoMsg(subject string, m proto.Message, workspaceID, eventID string) (*nats.Msg, error) {
	data, err := proto.Marshal(m)
	if err != nil {
		return nil, err
	}
	return streamMsg(subject, data, workspaceID, eventID), nil
}

// StreamQueue is app.Queue on JetStream: events on the PLATFORM stream at
// platform.evt.<workspace>.<event>, jobs on WEBHOOK_DELIVERIES, each
// deduplicated by its Nats-Msg-Id.
type StreamQueue struct {
	JS jetstream.JetStream
	// Deliveries, when set, makes WEBHOOK_DELIVERIES again when a fan-out
	// finds it deleted (the jobs it held are lost with it), where before
	// no webhook was delivered until a restart.
	Deliveries *eventstore.KeptStream
}

// NewStreamQueue is a StreamQueue that keeps WEBHOOK_DELIVERIES.
func NewStreamQueue(js jetstream.JetStream, log *slog.Logger) StreamQueue {
	return StreamQueue{JS: js, Deliveries: &eventstore.KeptStream{JS: js, Config: deliveriesConfig(1), Sibling: events.WebhooksStream, Log: log}}
}

// PublishEvent stores e with its id as the message id, and the request's
// trace.
func (q StreamQueue) PublishEvent(ctx context.Context, e app.PlatformEvent) error {
	subject, err := events.PlatformSubject(e.WorkspaceID, e.Event)
	if err != nil {
		return err
	}
	msg := streamMsg(subject, e.Body, e.WorkspaceID, e.ID)
	if tp := tracing.RequestTrace(ctx); tp != "" {
		msg.Header.Set(events.HeaderTraceparent, tp)
	}
	if e.Digest != "" {
		msg.Header.Set(events.HeaderRequestDigest, e.Digest)
	}
	ack, err := eventstore.Publish(ctx, q.JS, msg, jetstream.WithMsgID(e.ID), jetstream.WithExpectStream(events.PlatformStream))
	if err != nil {
		return fmt.Errorf("publish platform event: %w", err)
	}
	if !ack.Duplicate {
		return nil
	}
	// A duplicate's acknowledgement names the message stored first: the
	// same request again, or its key with another event.
	stream, err := q.JS.Stream(ctx, events.PlatformStream)
	if err != nil {
		return fmt.Errorf("read the platform event stored under %s: %w", e.ID, err)
	}
	first, err := stream.GetMsg(ctx, ack.Sequence)
	if err != nil {
		return fmt.Errorf("read the platform event stored under %s: %w", e.ID, err)
	}
	if first.Header.Get(events.HeaderRequestDigest) != e.Digest {
		return apperr.IdempotencyKeyReused
	}
	return nil
}

// Defer publishes a message schedule on the job's deferred subject
// (webhooks.deferred.<workspace>.<webhook>.<job>), which WEBHOOK_DELIVERIES
// turns at d.At into the job on its delivery subject, behind what is
// queued by then, with the attempts made of it and its deferrals in its
// headers. The schedule's message id is d.Key: deferred twice, the copy
// comes back once.
func (q StreamQueue) Defer(ctx context.Context, d app.Deferral) error {
	job := d.Job
	target, err := events.WebhookDeliverySubject(job.GetWorkspaceId(), job.GetWebhookId())
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(app.JobID(job)))
	subject, err := events.WebhookDeferredSubject(job.GetWorkspaceId(), job.GetWebhookId(), hex.EncodeToString(sum[:12]))
	if err != nil {
		return err
	}
	msg, err := jobMsg(subject, d.Queued)
	if err != nil {
		return err
	}
	msg.Header.Set(events.HeaderAttemptsMade, strconv.Itoa(d.AttemptsMade))
	msg.Header.Set(events.HeaderDeferrals, strconv.Itoa(d.Deferrals))
	_, err = eventstore.Publish(ctx, q.JS, msg, jetstream.WithMsgID(d.Key), jetstream.WithExpectStream(events.WebhookDeliveriesStream),
		jetstream.WithScheduleAt(d.At), jetstream.WithScheduleTarget(target))
	if err != nil {
		q.Deliveries.Heal(err)
		return fmt.Errorf("defer delivery job: %w", err)
	}
	return nil
}

// jobMsg is the message of a queued job on subject, with the trace its
// delivery continues (the event's).
func jobMsg(subject string, qd app.Queued) (*nats.Msg, error) {
	job := qd.Job
	msg, err := protoMsg(subject, job, job.GetWorkspaceId(), job.GetEventId())
	if err != nil {
		return nil, err
	}
	if qd.Traceparent != "" {
		msg.Header.Set(events.HeaderTraceparent, qd.Traceparent)
	}
	return msg, nil
}

// QueuedOf reads what Defer wrote in a job's headers: the attempts made
// of it before it was put back, and its deferrals (0 when it was not).
func QueuedOf(job *webhooksv1.DeliveryJob, h map[string][]string) app.Queued {
	header := nats.Header(h)
	made, _ := strconv.Atoi(header.Get(events.HeaderAttemptsMade))
	deferrals, _ := strconv.Atoi(header.Get(events.HeaderDeferrals))
	return app.Queued{Job: job, Traceparent: header.Get(events.HeaderTraceparent), AttemptsMade: max(made, 0), Deferrals: max(deferrals, 0)}
}

// QueueDelivery publishes each job on its webhook's delivery subject, at
// once and in order, and returns once the stream stored every one
// (within jobStoreWait), each with its trace.
func (q StreamQueue) QueueDelivery(ctx context.Context, queued ...app.Queued) error {
	err := q.queueDelivery(ctx, queued)
	if err != nil {
		q.Deliveries.Heal(err) // the fan-out tries again
	}
	return err
}

func (q StreamQueue) queueDelivery(ctx context.Context, queued []app.Queued) error {
	futures := make([]jetstream.PubAckFuture, 0, len(queued))
	for _, qd := range queued {
		job := qd.Job
		subject, err := events.WebhookDeliverySubject(job.GetWorkspaceId(), job.GetWebhookId())
		if err != nil {
			return err
		}
		msg, err := jobMsg(subject, qd)
		if err != nil {
			return err
		}
		f, err := q.JS.PublishMsgAsync(msg, jetstream.WithMsgID(app.JobID(job)))
		if err != nil {
			return err
		}
		futures = append(futures, f)
	}
	timeout := time.NewTimer(jobStoreWait)
	defer timeout.Stop()
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return err
		case <-timeout.C:
			return errors.New("delivery job publish timed out")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// jobStoreWait bounds the wait for the stream to store a fan-out's jobs.
const jobStoreWait = 10 * time.Second
