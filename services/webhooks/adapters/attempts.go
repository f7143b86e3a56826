package adapters

import (
	"context"
	"log/slog"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/services/webhooks/adapters/memory"
)

// StreamAttemptLog is app.AttemptLog on the WEBHOOK_ATTEMPTS stream:
// Record adds the attempt to the in-memory log and publishes it, and the
// log follows the stream for the attempts other processes record.
type StreamAttemptLog struct {
	*memory.AttemptLog
	JS jetstream.JetStream
}

// FollowAttemptLog replays the attempts stream into l and follows it; it
// returns once the replay is complete.
func FollowAttemptLog(ctx context.Context, js jetstream.JetStream, l *memory.AttemptLog, log *slog.Logger) error {
	return FollowAttempts(ctx, js, log, l.Add)
}

// Record adds a to the log and publishes it, without waiting for the
// stream's answer.
func (l StreamAttemptLog) Record(ctx context.Context, a *webhooksv1.DeliveryAttempt) error {
	l.Add(a)
	return AttemptPublisher{JS: l.JS}.Record(ctx, a)
}

// RecordDurable adds a to the log and publishes it, waiting for the
// stream's answer.
func (l StreamAttemptLog) RecordDurable(ctx context.Context, a *webhooksv1.DeliveryAttempt) error {
	l.Add(a)
	return AttemptPublisher{JS: l.JS}.RecordDurable(ctx, a)
}

// AttemptPublisher is app.AttemptRecorder on the WEBHOOK_ATTEMPTS stream
// alone: a dispatcher records its attempts there for every process that
// follows the stream (the API's delivery log, the auto-disable rule, the
// durable log in Mongo), keeping none itself.
type AttemptPublisher struct{ JS jetstream.JetStream }

// Record publishes a, deduplicated by its attempt id, without waiting for
// the stream's answer.
func (p AttemptPublisher) Record(_ context.Context, a *webhooksv1.DeliveryAttempt) error {
	msg, err := attemptMsg(a)
	if err != nil {
		return err
	}
	_, err = p.JS.PublishMsgAsync(msg, jetstream.WithMsgID(a.GetAttemptId()))
	return err
}

// RecordDurable publishes a, deduplicated by its attempt id, and waits
// for the stream to store it.
func (p AttemptPublisher) RecordDurable(ctx context.Context, a *webhooksv1.DeliveryAttempt) error {
	msg, err := attemptMsg(a)
	if err != nil {
		return err
	}
	_, err = p.JS.PublishMsg(ctx, msg, jetstream.WithMsgID(a.GetAttemptId()))
	return err
}

// attemptMsg is a as a WEBHOOK_ATTEMPTS record.
func attemptMsg(a *webhooksv1.DeliveryAttempt) (*nats.Msg, error) {
	subject, err := events.WebhookAttemptSubject(a.GetWorkspaceId(), a.GetWebhookId())
	if err != nil {
		return nil, err
	}
	return protoMsg(subject, a, a.GetWorkspaceId(), a.GetEventId())
}
