package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	events "github.com/voiceai-platform/voiceai/proto-events"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// The QA worker's rules: one ticket per agent and failing test, opened,
// added to, reopened, passed on to a merge target and started afresh
// after a delete; and tickets raised from conversation reports.

func failing(test string, runs ...app.RunFailure) app.FailingTest {
	return app.FailingTest{WorkspaceID: "ws_a", AgentID: "agent_1", TestID: test, TestName: "refund policy", Failures: runs}
}

func run(inv, id string) app.RunFailure {
	return app.RunFailure{InvocationID: inv, RunID: id, Rationale: "quoted 60 days", At: time.Unix(1_799_999_000, 0)}
}

// history is the events stored on ticket id of ws_a, oldest first.
func (f *fixture) history(t *testing.T, id string) []eventlog.Record {
	t.Helper()
	subject, err := events.TicketSubject("ws_a", id)
	if err != nil {
		t.Fatal(err)
	}
	recs, _, err := f.log.Load(context.Background(), subject)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// eventTypes are the types of the events stored on ticket id, oldest first.
func (f *fixture) eventTypes(t *testing.T, id string) []string {
	t.Helper()
	var types []string
	for _, r := range f.history(t, id) {
		types = append(types, r.Type)
	}
	return types
}

func (f *fixture) record(t *testing.T, ft app.FailingTest) *ticketsv1.Ticket {
	t.Helper()
	tk, err := f.app.RecordTestFailures(context.Background(), ft)
	if err != nil {
		t.Fatalf("record %v: %v", ft.Failures, err)
	}
	return tk
}

func TestFailingTestOpensOneTicketAndAddsToIt(t *testing.T) {
	f := newFixture(t)
	if tk, err := f.app.RecordTestFailures(context.Background(), failing("test_1")); tk != nil || err != nil {
		t.Fatalf("no failures opened %+v, %v", tk, err)
	}

	first := f.record(t, failing("test_1", run("inv_1", "run_1"), run("inv_1", "run_2")))
	tf := first.TestFailures
	if first.Source != domain.SourceQA || !first.NeedsClustering || first.OwnerUserId != app.QAActor || first.Status != domain.StatusOpen ||
		first.AgentId != "agent_1" || len(first.Labels) != 1 || first.Labels[0] != app.TestFailureLabel ||
		tf.GetTestId() != "test_1" || tf.FailedRuns != 2 || len(tf.Invocations) != 1 || len(tf.Invocations[0].RunIds) != 2 ||
		len(first.TicketComments) != 1 || !strings.Contains(first.GetQaComment(), "quoted 60 days") {
		t.Fatalf("the first failures: %+v", first)
	}
	// Opened as any ticket is: its subscribers hear ticket_created.
	if got := f.eventTypes(t, first.TicketId); len(got) != 1 || got[0] != events.TypeTicketCreated {
		t.Fatalf("events of the opened ticket: %v", got)
	}

	// A redelivered batch changes nothing.
	again := f.record(t, failing("test_1", run("inv_1", "run_2")))
	if again.TicketId != first.TicketId || again.TestFailures.FailedRuns != 2 || len(again.TicketComments) != 1 {
		t.Fatalf("a redelivery was recorded: %+v", again)
	}

	// A failure in a new invocation is added, with a comment.
	later := f.record(t, failing("test_1", run("inv_2", "run_3")))
	if later.TicketId != first.TicketId || later.TestFailures.FailedRuns != 3 || len(later.TestFailures.Invocations) != 2 || len(later.TicketComments) != 2 {
		t.Fatalf("a new invocation's failure: %+v", later)
	}
	if got := f.eventTypes(t, first.TicketId); len(got) != 2 || got[1] != events.TypeTestFailureRecorded {
		t.Fatalf("events after a new failure: %v", got)
	}

	// Another test of the agent has a ticket of its own.
	other := f.record(t, failing("test_2", run("inv_2", "run_4")))
	if other.TicketId == first.TicketId {
		t.Fatal("two failing tests share a ticket")
	}
}

func TestFailureAfterResolveReopens(t *testing.T) {
	f := newFixture(t)
	tk := f.record(t, failing("test_1", run("inv_1", "run_1")))
	if _, err := f.setStatus(domain.StatusResolved)(t, tk.TicketId); err != nil {
		t.Fatal(err)
	}
	reopened := f.record(t, failing("test_1", run("inv_2", "run_2")))
	last := reopened.StatusChanges[len(reopened.StatusChanges)-1]
	if reopened.TicketId != tk.TicketId || reopened.Status != domain.StatusOpen || last.Status != domain.StatusOpen || last.GetChangedByUserId() != app.QAActor {
		t.Fatalf("a failure after resolve: %+v", reopened)
	}
	if c := reopened.TicketComments[len(reopened.TicketComments)-1].Comment; !strings.HasPrefix(c, "Reopened") {
		t.Fatalf("the last comment: %q", c)
	}
}

// A redelivered batch whose failures span more invocations than a ticket
// shows is counted once, and reopens nothing: the invocations pushed out
// of the shown ones are remembered.
func TestARedeliveryPastTheShownInvocationsIsNotCountedAgain(t *testing.T) {
	f := newFixture(t)
	var runs []app.RunFailure
	for i := range 11 {
		runs = append(runs, run(fmt.Sprintf("inv_%02d", i), fmt.Sprintf("run_%02d", i)))
	}
	first := f.record(t, failing("test_1", runs...))
	if first.TestFailures.FailedRuns != 11 || len(first.TestFailures.Invocations) != 10 || len(first.TicketComments) != 11 {
		t.Fatalf("the first delivery: %d failed runs, %d invocations shown, %d comments", first.TestFailures.FailedRuns, len(first.TestFailures.Invocations), len(first.TicketComments))
	}
	if _, err := f.setStatus(domain.StatusResolved)(t, first.TicketId); err != nil {
		t.Fatal(err)
	}
	if tk, err := f.app.RecordTestFailures(context.Background(), failing("test_1", runs...)); err != nil || tk.TestFailures.FailedRuns != 11 || len(tk.TicketComments) != 11 || tk.Status != domain.StatusResolved {
		t.Fatalf("the batch redelivered: %d failed runs, %d comments, status %s (%v); want 11, 11, resolved",
			tk.GetTestFailures().GetFailedRuns(), len(tk.GetTicketComments()), tk.GetStatus(), err)
	}
	// A new invocation still counts, and reopens.
	later := f.record(t, failing("test_1", run("inv_11", "run_11")))
	if later.TestFailures.FailedRuns != 12 || later.Status != domain.StatusOpen {
		t.Fatalf("a new invocation after: %d failed runs, status %s", later.TestFailures.FailedRuns, later.Status)
	}
}

func TestFailuresPassToTheMergeTarget(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	qa := f.record(t, failing("test_1", run("inv_1", "run_1")))
	target := f.manual(t, "agent_1", "refunds are wrong")
	if _, err := f.app.Merge(ctx, principal.Caller{Principal: f.qa}, target.TicketId, []string{qa.TicketId}); err != nil {
		t.Fatal(err)
	}
	got := f.record(t, failing("test_1", run("inv_2", "run_2")))
	if got.TicketId != target.TicketId || !strings.Contains(got.TicketComments[len(got.TicketComments)-1].Comment, "inv_2") {
		t.Fatalf("a failure after the merge went to %s: %+v", got.TicketId, got)
	}
	if got.TestFailures.GetTestId() == "test_1" {
		t.Fatalf("the target took the test's failure record as its own: %+v", got.TestFailures)
	}
	source, _, err := f.app.Get(ctx, "ws_a", qa.TicketId)
	if err != nil || source.Status != domain.StatusMerged || source.TestFailures.FailedRuns != 1 {
		t.Fatalf("the merged ticket changed: %+v %v", source, err)
	}
}

func TestDeletedTicketMakesWayForANewOne(t *testing.T) {
	f := newFixture(t)
	first := f.record(t, failing("test_1", run("inv_1", "run_1")))
	if err := f.app.Delete(context.Background(), principal.Caller{Principal: f.admin}, first.TicketId); err != nil {
		t.Fatal(err)
	}
	next := f.record(t, failing("test_1", run("inv_2", "run_2")))
	if next.TicketId == first.TicketId || next.TestFailures.FailedRuns != 1 || next.Status != domain.StatusOpen {
		t.Fatalf("after a delete: %+v", next)
	}
	if again := f.record(t, failing("test_1", run("inv_3", "run_3"))); again.TicketId != next.TicketId {
		t.Fatalf("the next failure went to %s, not the new ticket %s", again.TicketId, next.TicketId)
	}
}

func TestConversationReportsRaiseOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	report := app.ConversationReport{WorkspaceID: "ws_a", AgentID: "agent_1", ConversationID: "conv_1", Source: domain.SourceAgent,
		Comment: strings.Repeat("x", domain.MaxComment+10), At: time.Unix(1_700_000_030, 0), EventID: "evt_1"}
	first, err := f.app.RaiseFromConversation(ctx, report)
	if err != nil || first.Source != domain.SourceAgent || len(first.GetQaComment()) != domain.MaxComment || !strings.HasSuffix(first.GetQaComment(), "...") {
		t.Fatalf("a report: %+v %v", first, err)
	}
	again, err := f.app.RaiseFromConversation(ctx, report)
	if err != nil || again.TicketId != first.TicketId || len(again.TicketComments) != 0 {
		t.Fatalf("a redelivered report: %+v %v", again, err)
	}
	report.EventID, report.Comment = "evt_2", "escalated again"
	joined, err := f.app.RaiseFromConversation(ctx, report)
	if err != nil || joined.TicketId != first.TicketId || len(joined.TicketComments) != 1 {
		t.Fatalf("a second report on the conversation: %+v %v", joined, err)
	}
}
