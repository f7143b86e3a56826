package qaworker

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	events "github.com/voiceai-platform/voiceai/proto-events"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/tickets/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// The rule, on every kind of run: a failed run is the agent's failure
// when its judge said so or when it broke its latency budget, never when
// it errored.
func TestWhichRunsAreTicketed(t *testing.T) {
	breach := []*testingv1.LatencyBudgetBreach{{Metric: "first_token_p95", MeasuredMs: 312, BudgetMs: 100}}
	for _, c := range []struct {
		name string
		run  *testingv1.RunResult
		want bool
	}{
		{"judged a failure", &testingv1.RunResult{Status: "failed", ConditionResult: "failure"}, true},
		{"over budget, the judge content", &testingv1.RunResult{Status: "failed", ConditionResult: "success", LatencyBudgetBreaches: breach}, true},
		{"over budget, the judge undecided", &testingv1.RunResult{Status: "failed", ConditionResult: "unknown", LatencyBudgetBreaches: breach}, true},
		{"passed", &testingv1.RunResult{Status: "passed", ConditionResult: "success"}, false},
		{"undecided", &testingv1.RunResult{Status: "failed", ConditionResult: "unknown"}, false},
		{"errored", &testingv1.RunResult{Status: "failed", ConditionResult: "unknown", Error: "The run exceeded its time limit of 2m0s."}, false},
		{"errored, with a breach", &testingv1.RunResult{Status: "failed", ConditionResult: "unknown", Error: "model down", LatencyBudgetBreaches: breach}, false},
	} {
		if got := ticketed(c.run); got != c.want {
			t.Errorf("%s: ticketed %v, want %v", c.name, got, c.want)
		}
	}
}

// A run that passed its condition but went over its test's latency
// budget opens the test's QA ticket like any failed run, and the ticket
// says the budget and the measured figure; a run of another test that
// passed within it opens nothing.
func TestABudgetFailureOpensItsTicket(t *testing.T) {
	env := testenv.StartNATS(t)
	js := connect(t, env)
	ctx := context.Background()
	for _, c := range []eventstore.StreamConfig{
		{Name: events.TicketsStream, Subjects: []string{events.TicketsAll}},
		{Name: events.TestingStream, Subjects: []string{events.TestingAll}},
		{Name: events.TestRunsStream, Subjects: []string{events.TestRunsAll}},
		{Name: events.PlatformStream, Subjects: []string{events.PlatformAll}},
	} {
		if _, err := eventstore.EnsureStream(ctx, js, c); err != nil {
			t.Fatal(err)
		}
	}
	inv := &testingv1.Invocation{InvocationId: invocation, WorkspaceId: ws, AgentId: agent, Tests: []*testingv1.PlannedTest{
		{TestId: "test_slow", TestName: "Opening hours, quickly"}, {TestId: "test_quick", TestName: "Greeting"}}}
	subject, _ := events.TestingSubject(ws, events.TestingKindInvocation, invocation)
	meta := esproto.Meta(ctx, ws, "", time.Now())
	if _, err := esproto.Append(ctx, eventstore.New(js, events.TestingStream), subject, 0, meta, &testingv1.InvocationCreated{Meta: meta, Invocation: inv}); err != nil {
		t.Fatal(err)
	}
	const why = "Time to first token p95 312 ms is over the test's budget of 100 ms. The agent states the opening hours."
	runs := eventstore.New(js, events.TestRunsStream)
	for _, r := range []*testingv1.RunResult{
		{RunId: "run_0", TestId: "test_slow", TestIndex: 0, Status: "failed", ConditionResult: "success", RationaleSummary: why,
			LatencyBudgetBreaches: []*testingv1.LatencyBudgetBreach{{Metric: "first_token_p95", MeasuredMs: 312, BudgetMs: 100}}},
		{RunId: "run_1", TestId: "test_quick", TestIndex: 1, Status: "passed", ConditionResult: "success", RationaleSummary: "Greets."},
	} {
		r.InvocationId, r.WorkspaceId, r.FinishedAtUnixMs = invocation, ws, time.Now().UnixMilli()
		subject, _ := events.RunSubject(ws, invocation, r.RunId)
		meta := esproto.Meta(ctx, ws, "", time.Now())
		if _, err := esproto.Append(ctx, runs, subject, 0, meta, &testingv1.RunCompleted{Meta: meta, Run: r}); err != nil {
			t.Fatal(err)
		}
	}

	log := slog.New(slog.DiscardHandler)
	idx := memory.NewIndex()
	a := app.New(eventstore.New(js, events.TicketsStream), idx, nil, log, time.Now)
	run, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- (&Worker{App: a, JS: js, Log: log, Batch: 4, Parallel: 2, AckWait: time.Second}).Run(run)
	}()
	tickets := func() []*ticketsv1.Ticket {
		page, _, err := idx.Page(ctx, app.Query{WorkspaceID: ws, Filter: app.Filter{Label: app.TestFailureLabel}, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		return page
	}
	testkit.Eventually(t, 30*time.Second, "the budget failure's ticket", func() bool { return len(tickets()) > 0 })
	// Counted once the worker has acknowledged both runs (a ticket is
	// written before its run is acknowledged), not after a pause.
	testkit.Eventually(t, 30*time.Second, "every run handled", func() bool {
		c, err := js.Consumer(ctx, events.TestRunsStream, RunsDurable)
		if err != nil {
			return false
		}
		info, err := c.Info(ctx)
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0
	})
	list := tickets()
	if len(list) != 1 {
		t.Fatalf("%d tickets, want the slow test's only", len(list))
	}
	tk := list[0]
	tf := tk.GetTestFailures()
	if tf.GetTestId() != "test_slow" || tf.GetFailedRuns() != 1 || !strings.Contains(tk.GetQaComment(), why) ||
		len(tk.GetTicketComments()) != 1 || !strings.Contains(tk.GetTicketComments()[0].GetComment(), "budget of 100 ms") {
		t.Fatalf("ticket %+v", tk)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
