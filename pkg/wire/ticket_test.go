package wire

import (
	"encoding/json"
	"testing"

	"google.golang.org/protobuf/proto"

	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/api"
)

// A ticket with only what every ticket has still answers every field the
// document requires: the spec's "or null" fields as null, lists as [].
func TestTicketOfAnswersTheDocumentsShape(t *testing.T) {
	for name, ticket := range map[string]*ticketsv1.Ticket{
		"bare": {TicketId: "tkt_1", WorkspaceId: "ws_1", AgentId: "agent_1", OwnerUserId: "u_1", Status: "open", Source: "manual", CreatedAtUnixSecs: 1, UpdatedAtUnixSecs: 1},
		"deleted": {TicketId: "tkt_3", WorkspaceId: "ws_1", AgentId: "agent_1", OwnerUserId: "u_1", Status: "open", Source: "manual",
			CreatedAtUnixSecs: 1, UpdatedAtUnixSecs: 2, DeletedAtUnixSecs: proto.Int64(2)},
		"full": {TicketId: "tkt_2", WorkspaceId: "ws_1", AgentId: "agent_1", OwnerUserId: "u_1", Status: "merged", Source: "qa",
			IssueType: "knowledge_gap", Priority: "high", Labels: []string{"billing"}, ConversationIds: []string{"conv_1"},
			TicketComments:  []*ticketsv1.Comment{{Comment: "again", CreatedAtUnixSecs: 2}},
			TurnComments:    []*ticketsv1.TurnComment{{TurnIndex: 3, Comment: "here", CreatedAtUnixSecs: 2}},
			StatusChanges:   []*ticketsv1.StatusChange{{Status: "open", ChangedAtUnixSecs: 1}},
			PriorityChanges: []*ticketsv1.PriorityChange{{Priority: "high", ChangedByUserId: "u_1", ChangedAtUnixSecs: 1}},
			TestFailures:    &ticketsv1.TestFailures{TestId: "test_1", TestName: "hours", FailedRuns: 1, Invocations: []*ticketsv1.FailedInvocation{{InvocationId: "inv_1", RunIds: []string{"run_1"}, FailedRuns: 1, LastFailedAtUnixSecs: 2}}},
		},
	} {
		b, err := json.Marshal(TicketOf(ticket))
		if err != nil {
			t.Fatal(err)
		}
		if err := api.CheckJSON("Ticket", b); err != nil {
			t.Errorf("%s: %v\n%s", name, err, b)
		}
	}
}
