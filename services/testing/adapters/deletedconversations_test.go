package adapters_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/testing/adapters"
)

// refusingFirst is JetStream whose first stream lookups fail with an
// error no wait retries (a permission the operator had not yet granted).
type refusingFirst struct {
	jetstream.JetStream
	refusals atomic.Int32
}

func (r *refusingFirst) Stream(ctx context.Context, name string) (jetstream.Stream, error) {
	if r.refusals.Add(-1) >= 0 {
		return nil, errors.New("nats: permissions violation")
	}
	return r.JetStream.Stream(ctx, name)
}

// A follower of the deletions that could not start is started again:
// before, it logged once and the set stayed empty for the process's life,
// so tests made from deleted conversations never said so.
func TestDeletedConversationsAreFollowedAfterAFailedStart(t *testing.T) {
	js := testenv.JetStreamAt(t, testenv.StartNATS(t))
	ctx := t.Context()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: events.PlatformStream, Subjects: []string{events.PlatformAll}}); err != nil {
		t.Fatal(err)
	}
	subject, err := events.PlatformSubject("ws_1", convseal.DeletedEvent)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, subject, []byte(`{"event":"conversation_deleted","timestamp":"2026-12-02T00:00:00.000Z","data":{"conversation_id":"conv_1"}}`)); err != nil {
		t.Fatal(err)
	}
	refusing := &refusingFirst{JetStream: js}
	refusing.refusals.Store(2)
	deleted := adapters.NewDeletedConversations()
	deleted.Follow(ctx, refusing, slog.New(slog.DiscardHandler))
	testkit.Eventually(t, 10*time.Second, "the deletion known once the follower started again", func() bool {
		return deleted.Deleted("ws_1", "conv_1")
	})
	if deleted.Deleted("ws_2", "conv_1") {
		t.Fatal("a deletion known in another workspace")
	}
}
