package app_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/principal"

	"github.com/voiceai-platform/voiceai/services/tickets/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// Rule tests of clustering, by the offline rules and through a model
// that refuses some tickets, on the memory adapters.

// report raises a QA ticket on its own conversation of agent_1, as the QA
// worker does from an escalation.
func (f *fixture) report(t *testing.T, conv, comment string) *ticketsv1.Ticket {
	t.Helper()
	tk, err := f.app.RaiseFromConversation(context.Background(), app.ConversationReport{
		WorkspaceID: "ws_a", AgentID: "agent_1", ConversationID: conv, Source: domain.SourceAgent,
		Comment: comment, At: f.clock, EventID: "evt_" + conv,
	})
	if err != nil {
		t.Fatal(err)
	}
	f.clock = f.clock.Add(time.Second) // each ticket younger than the last
	return tk
}

func (f *fixture) cluster(t *testing.T) map[string]*ticketsv1.Ticket {
	t.Helper()
	if err := f.app.ClusterAgent(context.Background(), "ws_a", "agent_1"); err != nil {
		t.Fatal(err)
	}
	byConv := map[string]*ticketsv1.Ticket{}
	page, _, err := f.app.ReadModel.Page(context.Background(), app.Query{WorkspaceID: "ws_a", Filter: app.Filter{AgentID: "agent_1"}, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range page {
		if tk.NeedsClustering && domain.IsActive(tk.Status) {
			t.Errorf("ticket %s (%s) still needs clustering", tk.TicketId, tk.ConversationIds)
		}
		byConv[tk.ConversationIds[0]] = tk
	}
	return byConv
}

func clusterLabel(tk *ticketsv1.Ticket) string {
	i := slices.IndexFunc(tk.Labels, func(l string) bool { return strings.HasPrefix(l, domain.ClusterLabelPrefix) })
	if i < 0 {
		return ""
	}
	return tk.Labels[i]
}

func saidByQA(tk *ticketsv1.Ticket, what string) bool {
	return slices.ContainsFunc(tk.TicketComments, func(c *ticketsv1.Comment) bool {
		return c.GetOwnerUserId() == app.QAActor && strings.Contains(c.Comment, what)
	})
}

// The rules merge an exact duplicate into the older ticket, group similar
// tickets under the oldest one's label (which it carries too), and leave
// an unrelated one alone; a second pass changes nothing.
func TestRulesClusterAnAgentsTickets(t *testing.T) {
	f := newFixture(t)
	f.report(t, "conv_a", "Caller asked for a refund of a cancelled booking deposit")
	f.report(t, "conv_b", "Caller wants a refund of the cancelled booking deposit now")
	f.report(t, "conv_c", "Caller asked about parking near the restaurant")
	dupOf := f.report(t, "conv_d", "Caller asked about parking near the restaurant")

	got := f.cluster(t)
	a, b, c := got["conv_a"], got["conv_b"], got["conv_c"]
	if clusterLabel(a) == "" || clusterLabel(a) != clusterLabel(b) || clusterLabel(a) != domain.ClusterLabel(a.TicketId) {
		t.Fatalf("refund tickets: labels %v and %v", a.Labels, b.Labels)
	}
	if clusterLabel(c) != "" {
		t.Fatalf("the parking ticket was grouped: %v", c.Labels)
	}
	if d := got["conv_d"]; d.Status != domain.StatusMerged || d.GetMergedIntoTicketId() != c.TicketId || d.TicketId != dupOf.TicketId {
		t.Fatalf("the exact duplicate: status %s, merged into %q (want %s)", d.Status, d.GetMergedIntoTicketId(), c.TicketId)
	}
	if !saidByQA(b, "similar to "+a.TicketId) {
		t.Fatalf("the grouped ticket does not say why: %+v", b.TicketComments)
	}

	before := f.eventTypes(t, b.TicketId)
	f.cluster(t)
	if after := f.eventTypes(t, b.TicketId); len(after) != len(before) {
		t.Fatalf("a second pass changed a clustered ticket: %v, then %v", before, after)
	}

	// A newcomer like a ticket clustered alone before: both now carry the
	// older one's label.
	f.report(t, "conv_e", "Caller asked about parking near the restaurant tonight")
	got = f.cluster(t)
	c, e := got["conv_c"], got["conv_e"]
	if clusterLabel(c) != domain.ClusterLabel(c.TicketId) || clusterLabel(e) != clusterLabel(c) {
		t.Fatalf("the newcomer's group: labels %v and %v", c.Labels, e.Labels)
	}
}

// Two QA workers clustering at once can each settle one of two exact
// duplicates as having no similar ticket, neither having seen the other:
// the next pass merges the newer into the older, unless a person has
// touched it since.
func TestASettledTwinIsMergedByTheNextPass(t *testing.T) {
	f := newFixture(t)
	older := f.report(t, "conv_a", "Caller asked about parking near the restaurant")
	f.cluster(t)
	twin := f.report(t, "conv_b", "Caller asked about parking near the restaurant")
	touched := f.report(t, "conv_c", "Caller asked about parking near the restaurant")
	for _, id := range []string{twin.TicketId, touched.TicketId} { // settled by the other worker, which saw neither
		if _, err := f.app.Tickets.Update(context.Background(), "ws_a", id, "", func(tk *ticketsv1.Ticket, meta *commonv1.EventMeta) (proto.Message, error) {
			tk.NeedsClustering = false
			return &ticketsv1.TicketClustered{Meta: meta, Ticket: tk, DecidedBy: "rules"}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.app.AddComment(context.Background(), principal.Caller{Principal: f.qa}, touched.TicketId, app.CommentInput{Comment: "Looking into it."}); err != nil {
		t.Fatal(err)
	}
	f.report(t, "conv_d", "Caller asked about something else entirely") // wakes a pass
	got := f.cluster(t)
	if b := got["conv_b"]; b.Status != domain.StatusMerged || b.GetMergedIntoTicketId() != older.TicketId {
		t.Fatalf("the settled twin: %s, merged into %q (want %s)", b.Status, b.GetMergedIntoTicketId(), older.TicketId)
	}
	if c := got["conv_c"]; c.Status != domain.StatusOpen {
		t.Fatalf("the twin a person commented on: %s, want it left open", c.Status)
	}
}

// staleReadModel answers pages as they were when it was made: what a QA
// worker's index holds before it hears of another worker's changes.
type staleReadModel struct {
	app.ReadModel
	pages map[string][]*ticketsv1.Ticket // the first page of an agent's tickets, by status
}

func (s staleReadModel) Page(ctx context.Context, q app.Query) ([]*ticketsv1.Ticket, bool, error) {
	if page, ok := s.pages[q.Filter.Status]; ok && q.After == nil {
		return page, false, nil
	}
	return s.ReadModel.Page(ctx, q)
}

// A duplicate another QA worker merged since this pass read it is no
// failure (the batch was redelivered, logged at WARN): the pass goes on.
func TestADuplicateMergedMeanwhileIsNoFailure(t *testing.T) {
	f := newFixture(t)
	older := f.report(t, "conv_a", "Caller asked about parking near the restaurant")
	dup := f.report(t, "conv_b", "Caller asked about parking near the restaurant")
	stale := staleReadModel{ReadModel: f.app.ReadModel, pages: map[string][]*ticketsv1.Ticket{}}
	for _, status := range domain.ActiveStatuses {
		q := app.Query{WorkspaceID: "ws_a", Filter: app.Filter{AgentID: "agent_1", Status: status}, Limit: 100}
		page, _, err := f.app.ReadModel.Page(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		stale.pages[status] = page
	}
	if err := f.app.ClusterAgent(context.Background(), "ws_a", "agent_1"); err != nil { // the other worker
		t.Fatal(err)
	}
	f.app.ReadModel = stale
	if err := f.app.ClusterAgent(context.Background(), "ws_a", "agent_1"); err != nil {
		t.Fatalf("a pass on what it read before the other worker merged: %v", err)
	}
	f.app.ReadModel = stale.ReadModel
	if got := f.cluster(t)["conv_b"]; got.Status != domain.StatusMerged || got.GetMergedIntoTicketId() != older.TicketId || got.TicketId != dup.TicketId {
		t.Fatalf("the duplicate: %s into %q", got.Status, got.GetMergedIntoTicketId())
	}
}

// triage is a model that groups refunds with money-back requests, and
// refuses to judge parking.
func triage(it domain.ClusterItem, candidates []domain.ClusterItem) (app.ClusterAdvice, error) {
	if strings.Contains(it.Text, "parking") {
		return app.ClusterAdvice{}, errors.New("400 invalid_request_error: this model does not do parking")
	}
	advice := app.ClusterAdvice{IssueType: "knowledge_gap", Reason: "Both callers want a cancelled booking refunded."}
	for _, c := range candidates {
		if strings.Contains(it.Text, "refund") && strings.Contains(c.Text, "money back") ||
			strings.Contains(it.Text, "money back") && strings.Contains(c.Text, "refund") {
			advice.SimilarTo = append(advice.SimilarTo, c.ID)
		}
	}
	return advice, nil
}

// With a model, tickets the rules would keep apart are grouped on its
// word; a ticket it refuses is still clustered, by the rules, and says so.
func TestAModelClustersAndARefusedTicketFallsBackToTheRules(t *testing.T) {
	f := newFixture(t)
	model := &memory.Advisor{Model: "test/triage", Judge: triage}
	f.app.Advisor = model
	f.report(t, "conv_refund", "The caller asked for a refund of a cancelled booking")
	f.report(t, "conv_money", "Customer wants their money back after cancelling")
	f.report(t, "conv_parking", "Caller asked about parking near the restaurant")

	got := f.cluster(t)
	refund, money, parking := got["conv_refund"], got["conv_money"], got["conv_parking"]
	if clusterLabel(refund) == "" || clusterLabel(refund) != clusterLabel(money) {
		t.Fatalf("the model's group: labels %v and %v", refund.Labels, money.Labels)
	}
	if money.IssueType != "knowledge_gap" || !saidByQA(money, "the model says: Both callers want a cancelled booking refunded") {
		t.Fatalf("the model's judgement on the ticket: issue type %q, comments %+v", money.IssueType, money.TicketComments)
	}
	if clusterLabel(parking) != "" || !saidByQA(parking, "the model could not answer") {
		t.Fatalf("the refused ticket: labels %v, comments %+v", parking.Labels, parking.TicketComments)
	}
	if asked := model.Asked(); len(asked) != 3 {
		t.Fatalf("the model was asked about %d tickets, want each of the 3 once", len(asked))
	}
}
