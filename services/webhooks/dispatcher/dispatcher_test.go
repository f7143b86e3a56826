package dispatcher

import (
	"testing"
	"time"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/consume"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
)

// An event keeps one id however often it is delivered: the one its
// producer gave it, else its message id, else one derived from where it
// is stored, so a redelivered event queues no second job.
func TestStoredEventIDIsStable(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	msg := func(h eventlog.Header) consume.Msg {
		return consume.Msg{Record: eventstore.Record{Seq: 42, Header: h, Time: at}, Delivered: 3}
	}
	both := eventlog.Header{events.HeaderEventID: {"evt_given"}, events.HeaderMsgID: {"msg_1"}}
	if s := stored(msg(both), "ws_a", events.PlatformStream); s.EventID != "evt_given" || s.WorkspaceID != "ws_a" || !s.At.Equal(at) {
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
