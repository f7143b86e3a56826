package adapters

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/tracing"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
)

// StreamQueue is app.Queue on JetStream: events on the PLATFORM stream at
// platform.evt.<workspace>.<event>, jobs on WEBHOOK_DELIVERIES, each
// deduplicated by its Nats-Msg-Id.
type StreamQueue struct{ JS jetstream.JetStream }

// PublishEvent stores e with its id as the message id, and the request's
// trace.
func (q StreamQueue) PublishEvent(ctx context.Context, e app.PlatformEvent) error {
	subject, err := events.PlatformSubject(e.WorkspaceID, e.Event)
	if err != nil {
		return err
	}
	msg := nats.NewMsg(subject)
	msg.Data = e.Body
	msg.Header.Set(events.HeaderEventID, e.ID)
	msg.Header.Set(events.HeaderWorkspaceID, e.WorkspaceID)
	if tp := tracing.RequestTrace(ctx); tp != "" {
		msg.Header.Set(events.HeaderTraceparent, tp)
	}
	if _, err := eventstore.Publish(ctx, q.JS, msg, jetstream.WithMsgID(e.ID), jetstream.WithExpectStream(events.PlatformStream)); err != nil {
		return fmt.Errorf("publish platform event: %w", err)
	}
	return nil
}

// QueueDelivery publishes job on its webhook's delivery subject.
func (q StreamQueue) QueueDelivery(ctx context.Context, job *webhooksv1.DeliveryJob) error {
	subject, err := events.WebhookDeliverySubject(job.GetWorkspaceId(), job.GetWebhookId())
	if err != nil {
		return err
	}
	data, err := proto.Marshal(job)
	if err != nil {
		return err
	}
	msg := nats.NewMsg(subject)
	msg.Data = data
	msg.Header.Set(events.HeaderEventID, job.GetEventId())
	msg.Header.Set(events.HeaderWorkspaceID, job.GetWorkspaceId())
	msg.Header.Set(events.HeaderMsgID, app.JobID(job))
	_, err = q.JS.PublishMsg(ctx, msg)
	return err
}
