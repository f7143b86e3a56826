package tickets

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/config"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/tickets/adapters"
)

// On the store read index, the conversations collection dropped while
// the service was down (or restored from an older backup) is replayed
// from both its streams at the next start: the platform's events and the
// feedback on TICKETS. Its durables have acknowledged everything, so
// without the guard the listing stays empty for good.
func TestADroppedConversationStoreIsReplayed(t *testing.T) {
	ctx, deps := replicaDeps(t)
	var logs testkit.LogBuffer // the guards' account, shown when the test fails
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the service's log:\n%s", logs.String())
		}
	})
	start := func() (*Service, func()) {
		svcCtx, stop := context.WithCancel(ctx)
		d := deps()
		d.ReadIndex = config.ReadIndexStore
		d.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		svc, err := Start(svcCtx, d, Config{Secret: "secret"})
		if err != nil {
			t.Fatal(err)
		}
		// Stopped, the replica's goroutines still end their work (a
		// projector's write, a guard's look): its connections closed, none
		// of it reaches the store the next replica starts on. (Disconnect
		// waits for the operations in flight.)
		return svc, func() {
			stop()
			_ = svc.Stop()
			d.NC.Close()
			dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := d.Mongo.Disconnect(dctx); err != nil {
				t.Errorf("a replica's store client: %v", err)
			}
		}
	}
	d := deps()
	keys := sealingKeys(t, ctx, d.JS)
	liked := func(svc *Service) bool {
		code, body := serve(svc, "GET", "/v1/convai/conversations?rating_min=5", "")
		return code == 200 && strings.Contains(body, `"conv_1"`)
	}

	svc, stop := start()
	publishSealed(t, ctx, d.JS, keys, "conversation_ended", time.Now().Add(-time.Hour),
		`{"conversation_id":"conv_1","agent_id":"agent_1","transcript":[{"role":"user","message":"hello"}]}`)
	testkit.Eventually(t, 10*time.Second, "the conversation listed", func() bool {
		code, body := serve(svc, "GET", "/v1/convai/conversations", "")
		return code == 200 && strings.Contains(body, `"conv_1"`)
	})
	if code, body := serve(svc, "POST", "/v1/convai/conversations/conv_1/feedback", `{"feedback":"like"}`); code >= 300 {
		t.Fatalf("feedback: %d %s", code, body)
	}
	testkit.Eventually(t, 10*time.Second, "the feedback in the store", func() bool { return liked(svc) })
	for durable, stream := range map[string]string{adapters.ConversationsDurable: events.PlatformStream, adapters.AnnotationsDurable: events.TicketsStream} {
		testkit.Eventually(t, 10*time.Second, durable+" acknowledged all", func() bool {
			c, err := d.JS.Consumer(ctx, stream, durable) // its info as of now
			return err == nil && c.CachedInfo().NumAckPending == 0 && c.CachedInfo().NumPending == 0
		})
	}
	stop()

	if err := d.Database(Name).Collection(adapters.ConversationsCollection).Drop(ctx); err != nil {
		t.Fatal(err)
	}
	svc, stop = start()
	defer stop()
	// The guard replays at its first look, before the projector starts,
	// or, should that look fail (a store slow to answer), at the next one,
	// within its interval (10 s): the wait covers both.
	testkit.Eventually(t, 30*time.Second, "the conversation and its feedback replayed", func() bool { return liked(svc) })
}
