package adapters

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

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

// The delivery log keeps only the indexes its queries read: the event_id
// index earlier versions made is dropped at start-up, and a log that
// never had it starts without a word.
func TestStoreAttemptsDropsTheUnusedEventIndex(t *testing.T) {
	js := testenv.StreamsAt(t, EnsureStreams)
	coll := testenv.New(t).Mongo(t).Database("attempts_indexes").Collection("webhook_attempts")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "event_id", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	for range 2 { // the upgrade, then a restart
		if err := StoreAttempts(ctx, js, coll, log); err != nil {
			t.Fatal(err)
		}
	}
	specs, err := coll.Indexes().ListSpecifications(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	slices.Sort(names)
	if want := []string{"_id_", "webhook_id_1_at_unix_ms_-1", "webhook_id_1_delivery_id_1"}; !slices.Equal(names, want) {
		t.Errorf("indexes %v; want %v", names, want)
	}
	if logged.Len() != 0 {
		t.Errorf("logged %q; want nothing", logged.String())
	}
}
