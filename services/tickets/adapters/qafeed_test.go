package adapters

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/tracing"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/app/qafeedtest"
)

// The feed on JetStream passes the suite the memory one passes: messages
// are stored as their producers store them, protobuf events appended
// through the event store, platform envelopes published as they are.
// The feed runs as the service runs it (a minute's AckWait): a batch a
// stopped Follow held comes back to the next one because it is given
// back, not because it timed out.
func TestQAFeedConforms(t *testing.T) {
	qafeedtest.Run(t, func(t *testing.T, batch int) (app.QAFeed, qafeedtest.Put) {
		js := testenv.StreamsAt(t, func(ctx context.Context, js jetstream.JetStream, replicas int) error {
			return eventstore.EnsureEventStreams(ctx, js, replicas, events.TestRunsStream, events.TicketsStream, events.PlatformStream)
		})
		return QAFeed{JS: js, Batch: batch}, func(source app.QASource, msgs ...qafeedtest.Message) {
			t.Helper()
			for _, m := range msgs {
				storeQAMessage(t, js, source, m)
			}
		}
	})
}

// storeQAMessage stores m on the source's stream as its producer does.
func storeQAMessage(t *testing.T, js jetstream.JetStream, source app.QASource, m qafeedtest.Message) {
	t.Helper()
	src, ok := qaSourceOf(source)
	if !ok {
		t.Fatalf("no source %q", source)
	}
	ctx := tracing.WithRequestTrace(context.Background(), m.Traceparent)
	if !src.protobuf {
		msg := nats.NewMsg(m.Subject)
		msg.Header.Set(events.HeaderTraceparent, m.Traceparent)
		msg.Data = m.Body
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
		return
	}
	e, err := esproto.Encode(ctx, esproto.Meta(ctx, "", "", time.Now()), m.Event)
	if err != nil {
		t.Fatal(err)
	}
	if m.Body != nil {
		e.Data = m.Body
	}
	if _, err := eventstore.New(js, src.stream).Append(ctx, m.Subject, eventlog.AnySeq, "", e); err != nil {
		t.Fatal(err)
	}
}
