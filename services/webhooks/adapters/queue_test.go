package adapters

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/app/queuetest"
)

func TestStreamQueue(t *testing.T) {
	queuetest.Run(t, func(t *testing.T) (app.Queue, func() queuetest.Stored) {
		js := testenv.StreamsAt(t, EnsureStreams)
		return StreamQueue{JS: js}, func() queuetest.Stored {
			var s queuetest.Stored
			for _, m := range streamMessages(t, js, events.PlatformStream) {
				s.Events = append(s.Events, app.PlatformEvent{
					ID: m.Header.Get(events.HeaderEventID), WorkspaceID: m.Header.Get(events.HeaderWorkspaceID),
					Event: m.Subject[strings.LastIndexByte(m.Subject, '.')+1:], Body: m.Data,
				})
			}
			for _, m := range streamMessages(t, js, events.WebhookDeliveriesStream) {
				if strings.HasPrefix(m.Subject, events.WebhookDeferredSubjectPrefix+".") {
					continue // a deferred job's schedule: not queued yet
				}
				var j webhooksv1.DeliveryJob
				if err := proto.Unmarshal(m.Data, &j); err != nil {
					t.Fatal(err)
				}
				s.Jobs = append(s.Jobs, QueuedOf(&j, m.Header))
			}
			return s
		}
	})
}

// streamMessages reads every message a stream holds, oldest first.
func streamMessages(t *testing.T, js jetstream.JetStream, stream string) []*jetstream.RawStreamMsg {
	t.Helper()
	ctx := context.Background()
	str, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := str.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := str.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // removed (a deferred job's schedule, once it fired)
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// A WEBHOOK_DELIVERIES made before jobs could wait for their turn
// (discard new, no schedules, one subject) is updated in place, its jobs
// kept, and a job deferred then comes back.
func TestTheQueueOfOldIsUpdatedForTurns(t *testing.T) {
	js := testenv.StreamsAt(t, EnsureStreams)
	ctx := context.Background()
	testenv.RemakeStream(t, js, events.WebhookDeliveriesStream, func(ctx context.Context) error {
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: events.WebhookDeliveriesStream, Subjects: []string{events.WebhookDeliveriesAll},
			Retention: jetstream.WorkQueuePolicy, Discard: jetstream.DiscardNew, Storage: jetstream.FileStorage, Duplicates: 10 * time.Minute})
		return err
	})
	q := StreamQueue{JS: js}
	kept := &webhooksv1.DeliveryJob{EventId: "evt_1", WorkspaceId: "ws_a", WebhookId: "whk_1", Event: "call_ended", Body: []byte(`{}`)}
	if err := q.QueueDelivery(ctx, app.Queued{Job: kept}); err != nil {
		t.Fatal(err)
	}
	if err := EnsureStreams(ctx, js, 1); err != nil {
		t.Fatal(err)
	}
	back := &webhooksv1.DeliveryJob{EventId: "evt_2", WorkspaceId: "ws_a", WebhookId: "whk_1", Event: "call_ended", Body: []byte(`{}`)}
	if err := q.Defer(ctx, app.Deferral{Queued: app.Queued{Job: back, AttemptsMade: 1, Deferrals: 1}, At: time.Now(), Key: "evt_2:whk_1@5"}); err != nil {
		t.Fatal(err)
	}
	var jobs []string
	testkit.Eventually(t, 10*time.Second, "the deferred job back beside the one kept", func() bool {
		jobs = nil
		for _, m := range streamMessages(t, js, events.WebhookDeliveriesStream) {
			if m.Subject == "webhooks.delivery.ws_a.whk_1" {
				jobs = append(jobs, m.Header.Get(events.HeaderEventID)+"/"+m.Header.Get(events.HeaderAttemptsMade))
			}
		}
		return len(jobs) == 2
	})
	if jobs[0] != "evt_1/" || jobs[1] != "evt_2/1" {
		t.Fatalf("queued %v", jobs)
	}
}
