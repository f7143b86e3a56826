package adapters

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
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
				var j webhooksv1.DeliveryJob
				if err := proto.Unmarshal(m.Data, &j); err != nil {
					t.Fatal(err)
				}
				s.Jobs = append(s.Jobs, app.Queued{Job: &j, Traceparent: m.Header.Get(events.HeaderTraceparent)})
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
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}
