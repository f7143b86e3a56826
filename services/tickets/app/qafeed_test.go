package app_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	events "github.com/voiceai-platform/voiceai/proto-events"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// encodedTicketEvents are ticket events as the event store holds them,
// each carrying a ticket that needs clustering and one that does not.
func encodedTicketEvents(t testing.TB) []eventlog.Event {
	ctx := context.Background()
	var out []eventlog.Event
	for _, needs := range []bool{true, false} {
		ticket := &ticketsv1.Ticket{
			TicketId: "tkt_1", WorkspaceId: "ws_a", AgentId: "agent_1", Title: "Quoted the wrong refund window",
			Labels: []string{"refunds"}, ConversationIds: []string{"conv_1", "conv_2"}, NeedsClustering: needs,
			TicketComments: []*ticketsv1.Comment{{Comment: "Seen twice this week.", CreatedAtUnixSecs: 1_799_999_000}},
		}
		for _, ev := range []func(*commonv1.EventMeta) proto.Message{
			func(m *commonv1.EventMeta) proto.Message { return &ticketsv1.TicketCreated{Meta: m, Ticket: ticket} },
			func(m *commonv1.EventMeta) proto.Message {
				return &ticketsv1.TicketUpdated{Meta: m, Ticket: ticket, ChangedFields: []string{"labels"}}
			},
			func(m *commonv1.EventMeta) proto.Message {
				return &ticketsv1.TicketMerged{Meta: m, Ticket: ticket, TargetTicketId: "tkt_2"}
			},
			func(m *commonv1.EventMeta) proto.Message {
				return &ticketsv1.TestFailureRecorded{Meta: m, Ticket: ticket, RunIds: []string{"run_1"}}
			},
		} {
			meta := esproto.Meta(ctx, "ws_a", "", time.Unix(1_799_999_000, 0))
			e, err := esproto.Encode(ctx, meta, ev(meta))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, e)
		}
	}
	return out
}

// The QA worker decodes exactly the ticket events whose ticket needs
// clustering, whatever the event: reading the one field says what
// decoding the event would.
func TestDecodesTicketReadsWhatDecodingWould(t *testing.T) {
	for _, e := range encodedTicketEvents(t) {
		msg, err := esproto.Decode(eventlog.Record{Type: e.Type, Data: e.Data})
		if err != nil {
			t.Fatal(err)
		}
		ticket, ok := events.StateOf[*ticketsv1.Ticket](msg)
		if !ok {
			t.Fatalf("%s carries no ticket", e.Type)
		}
		want := ticket.NeedsClustering
		if got := app.DecodesTicket(e.Type, e.Data); got != want {
			t.Errorf("%s with needs_clustering %v: DecodesTicket %v", e.Type, want, got)
		}
	}
	if !app.DecodesTicket("tickets.ticket_created", []byte("\x0a\x40too short")) {
		t.Error("a body cut short is passed by; want it decoded, for its error")
	}
}

// FuzzDecodesTicket: whatever the body, a ticket event that decodes to a
// ticket needing clustering is never passed by undecoded.
func FuzzDecodesTicket(f *testing.F) {
	for _, e := range encodedTicketEvents(f) {
		f.Add(e.Type, e.Data)
	}
	f.Fuzz(func(t *testing.T, eventType string, data []byte) {
		decodes := app.DecodesTicket(eventType, data)
		msg, err := esproto.Decode(eventlog.Record{Type: eventType, Data: data})
		if err != nil || decodes {
			return
		}
		if ticket, ok := events.StateOf[*ticketsv1.Ticket](msg); ok && ticket.NeedsClustering {
			t.Fatalf("%s %x decodes to a ticket that needs clustering, and was passed by", eventType, data)
		}
	})
}
