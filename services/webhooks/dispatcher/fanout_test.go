package dispatcher

import (
	"encoding/json"
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// Every ticket event reaches webhooks as a subscribable event with the
// API's data for it, the QA worker's own event types included: their
// internal fields (runs, reasons, who decided) stay internal.
func TestTicketEventsArePublicWhoeverMadeThem(t *testing.T) {
	meta := &commonv1.EventMeta{EventId: "evt_1", WorkspaceId: "ws_a"}
	tk := &ticketsv1.Ticket{TicketId: "tkt_1", WorkspaceId: "ws_a", Status: "open", Source: "qa"}
	for _, c := range []struct {
		typ       string
		msg       proto.Message
		name      string
		wantExtra map[string]any
	}{
		{events.TypeTicketCreated, &ticketsv1.TicketCreated{Meta: meta, Ticket: tk}, "ticket_created", map[string]any{}},
		{events.TypeTicketUpdated, &ticketsv1.TicketUpdated{Meta: meta, Ticket: tk, ChangedFields: []string{"title"}}, "ticket_updated",
			map[string]any{"changed_fields": []any{"title"}}},
		{events.TypeTestFailureRecorded, &ticketsv1.TestFailureRecorded{Meta: meta, Ticket: tk, InvocationIds: []string{"inv_2"}, RunIds: []string{"run_3"}},
			"ticket_commented", map[string]any{}},
		{events.TypeTestFailureRecorded, &ticketsv1.TestFailureRecorded{Meta: meta, Ticket: tk, RunIds: []string{"run_4"}},
			"ticket_updated", map[string]any{"changed_fields": []any{"test_failures"}}},
		{events.TypeTestFailureRecorded, &ticketsv1.TestFailureRecorded{Meta: meta, Ticket: tk, InvocationIds: []string{"inv_3"}, RunIds: []string{"run_5"}, Reopened: true},
			"ticket_status_changed", map[string]any{"previous_status": "resolved"}},
		{events.TypeTicketClustered, &ticketsv1.TicketClustered{Meta: meta, Ticket: tk, ClusterLabel: "cluster-x", IssueTypeSet: "knowledge_gap",
			Reason: "similar", DecidedBy: "rules", ChangedFields: []string{"issue_type", "labels", "needs_clustering"}},
			"ticket_updated", map[string]any{"changed_fields": []any{"issue_type", "labels", "needs_clustering"}}},
	} {
		name, public := publicTicketEvent(c.typ, c.msg)
		if name != c.name || !domain.IsTicketEvent(name) {
			t.Fatalf("%s %v: public as %q, want %q", c.typ, c.msg, name, c.name)
		}
		if events.MetaOf(public).GetEventId() != "evt_1" {
			t.Fatalf("%s: the public event lost its meta", c.typ)
		}
		data, err := ticketEventData(public)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		ticket, _ := got["ticket"].(map[string]any)
		if ticket["agentqa_ticket_id"] != "tkt_1" {
			t.Fatalf("%s: ticket %v", c.typ, got["ticket"])
		}
		delete(got, "ticket")
		if !reflect.DeepEqual(got, c.wantExtra) {
			t.Fatalf("%s as %s: data beside the ticket %v, want %v", c.typ, name, got, c.wantExtra)
		}
	}
}
