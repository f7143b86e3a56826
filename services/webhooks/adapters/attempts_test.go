package adapters

import (
	"context"
	"log/slog"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
	events "github.com/voiceai-platform/voiceai/proto-events"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"
	"github.com/voiceai-platform/voiceai/services/webhooks/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/app/attemptlogtest"
)

func TestStreamAttemptLog(t *testing.T) {
	attemptlogtest.Run(t, func(t *testing.T) (app.AttemptLog, func() app.AttemptLog) {
		js := testenv.StreamsAt(t, EnsureStreams)
		ctx := context.Background()
		log := slog.New(slog.DiscardHandler)
		// A restart: a new log replaying the stream.
		reopen := func() app.AttemptLog {
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			l := memory.NewAttemptLog()
			if err := FollowAttemptLog(ctx, js, l, log); err != nil {
				t.Fatal(err)
			}
			return StreamAttemptLog{AttemptLog: l, JS: js}
		}
		return reopen(), reopen
	})
}

// RecordDurable waits for the stream's answer: with no stream to store
// the attempt it fails, where Record (which does not wait) succeeds.
func TestRecordDurableWaitsForTheStream(t *testing.T) {
	js := testenv.StreamsAt(t, EnsureStreams)
	ctx := context.Background()
	if err := js.DeleteStream(ctx, events.WebhookAttemptsStream); err != nil {
		t.Fatal(err)
	}
	a := &webhooksv1.DeliveryAttempt{AttemptId: "evt_1:whk_1:1", EventId: "evt_1", WorkspaceId: "ws_a", WebhookId: "whk_1"}
	if err := (AttemptPublisher{JS: js}).Record(ctx, a); err != nil {
		t.Fatalf("record: %v", err)
	}
	if err := (AttemptPublisher{JS: js}).RecordDurable(ctx, a); err == nil {
		t.Fatal("recorded durably with no stream to store it")
	}
}
