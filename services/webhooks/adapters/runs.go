package adapters

import (
	"context"
	"log/slog"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/eventstore"
)

// FollowAttempts replays the attempts stream (the newest attempts of each
// webhook) into apply and follows it; it returns once the replay is
// complete.
func FollowAttempts(ctx context.Context, js jetstream.JetStream, log *slog.Logger, apply func(*webhooksv1.DeliveryAttempt)) error {
	return followReplayed(ctx, js, events.WebhookAttemptsStream, []string{events.WebhookAttemptsAll}, false, func(rec eventstore.Record) {
		var a webhooksv1.DeliveryAttempt
		if err := proto.Unmarshal(rec.Data, &a); err != nil {
			log.Warn("attempt record undecodable", "seq", rec.Seq, "err", err)
			return
		}
		apply(&a)
	})
}
