package dispatcher

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	events "github.com/voiceai-platform/voiceai/proto-events"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/consume"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/services/webhooks/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
)

// An event keeps one id however often it is delivered: the one its
// producer gave it, else its message id, else one derived from where it
// is stored, so a redelivered event queues no second job. Its trace is
// the one it was stored with.
func TestStoredEventIDIsStable(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	msg := func(h eventlog.Header) eventstore.Record {
		return eventstore.Record{Seq: 42, Header: h, Time: at}
	}
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	both := eventlog.Header{events.HeaderEventID: {"evt_given"}, events.HeaderMsgID: {"msg_1"}, events.HeaderTraceparent: {tp}}
	if s := stored(msg(both), "ws_a", events.PlatformStream); s.EventID != "evt_given" || s.WorkspaceID != "ws_a" || !s.At.Equal(at) || s.Traceparent != tp {
		t.Fatalf("%+v", s)
	}
	if s := stored(msg(eventlog.Header{events.HeaderMsgID: {"msg_1"}}), "ws_a", events.PlatformStream); s.EventID != "msg_1" {
		t.Fatalf("%+v", s)
	}
	a, b := stored(msg(nil), "ws_a", events.PlatformStream), stored(msg(nil), "ws_a", events.PlatformStream)
	if a.EventID != b.EventID || a.EventID == stored(msg(nil), "ws_a", events.TicketsStream).EventID || len(a.EventID) < 5 || a.EventID[:4] != "evt_" {
		t.Fatalf("derived ids %q %q", a.EventID, b.EventID)
	}
}

// A use case's verdict is how the message is settled.
func TestSettleAsTheUseCaseSays(t *testing.T) {
	if !settle(app.Handled{Next: app.Done}).IsDone() {
		t.Fatal("done")
	}
	if ok, after := settle(app.Handled{Next: app.RetryLater, After: 5 * time.Second}).IsRetry(); !ok || after != 5*time.Second {
		t.Fatalf("retry after %s", after)
	}
	if ok, after := settle(app.Handled{Next: app.RetryLater}).IsRetry(); !ok || after != 0 {
		t.Fatalf("a retry without delay waits %s", after) // retry_delay 0: at once
	}
	if !settle(app.Handled{Next: app.Drop}).IsGiveUp() {
		t.Fatal("drop")
	}
}

// pickyQueue refuses, every time, to queue a job of the event it names.
type pickyQueue struct {
	*memory.Queue
	refuse string
}

func (q pickyQueue) QueueDelivery(ctx context.Context, jobs ...app.Queued) error {
	for _, j := range jobs {
		if j.Job.GetEventId() == q.refuse {
			return errors.New("too large to queue")
		}
	}
	return q.Queue.QueueDelivery(ctx, jobs...)
}

// storedMsg is a platform event as a fan-out consumer is handed it.
type storedMsg struct {
	jetstream.Msg // what the handler must not call
	seq           uint64
	eventID       string
}

func (m storedMsg) Subject() string { return "platform.evt.ws_a.call_started" }
func (m storedMsg) Headers() nats.Header {
	return nats.Header{events.HeaderEventID: {m.eventID}}
}
func (m storedMsg) Data() []byte { return []byte(`{"event":"call_started","data":{}}`) }
func (m storedMsg) Metadata() (*jetstream.MsgMetadata, error) {
	return &jetstream.MsgMetadata{Sequence: jetstream.SequencePair{Stream: m.seq}, NumDelivered: 1, Timestamp: time.UnixMilli(2_000)}, nil
}

// A batch whose jobs cannot all be queued is fanned out event by event:
// the consumer is told to deliver again only the event that failed, and
// the others' jobs are queued, in order.
func TestFanoutRetriesOnlyTheEventThatCannotBeQueued(t *testing.T) {
	reg := memory.NewRegistry()
	reg.Put(1, &webhooksv1.Webhook{WebhookId: "whk_1", WorkspaceId: "ws_a", Active: true, Events: []string{"call_started"}, CreatedAtUnixMs: 1_000})
	queue := memory.NewQueue()
	d := &Dispatcher{Deps: Deps{Log: slog.New(slog.DiscardHandler)}, use: &app.Dispatch{
		Subscriptions: reg, Queue: pickyQueue{Queue: queue, refuse: "evt_2"}, Log: slog.New(slog.DiscardHandler), Now: time.Now,
	}}
	batch := []jetstream.Msg{storedMsg{seq: 1, eventID: "evt_1"}, storedMsg{seq: 2, eventID: "evt_2"}, storedMsg{seq: 3, eventID: "evt_3"}}
	err := d.fanout(d.platformEvent)(context.Background(), batch)
	if want := consume.Failed(errFanoutNotStored, 1); !reflect.DeepEqual(err, want) {
		t.Fatalf("batch handled with %v; want %v", err, want)
	}
	var queued []string
	for _, j := range queue.Jobs() {
		queued = append(queued, j.GetEventId())
	}
	if !slices.Equal(queued, []string{"evt_1", "evt_3"}) {
		t.Fatalf("queued %v; want evt_1 and evt_3", queued)
	}
	// The event alone in its batch fails as the batch.
	if err := d.fanout(d.platformEvent)(context.Background(), batch[1:2]); !errors.Is(err, errFanoutNotStored) {
		t.Fatalf("a batch of the failing event alone: %v", err)
	}
}
