package qaworker

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/tickets/adapters"
	"github.com/voiceai-platform/voiceai/services/tickets/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

const ws, agent, invocation = "ws_a", "agent_1", "inv_1"

// On JetStream (adapters.QAFeed): a worker killed mid-way loses no ticket and counts no run twice: the
// next replica gets the unacknowledged batches, and what the killed one
// had already written is recognised. Each failing test has exactly one
// ticket with exactly its one failed run.
func TestAKilledWorkerLosesNoTicket(t *testing.T) {
	const tests = 60
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
	inv := &testingv1.Invocation{InvocationId: invocation, WorkspaceId: ws, AgentId: agent}
	for i := range tests {
		inv.Tests = append(inv.Tests, &testingv1.PlannedTest{TestId: fmt.Sprintf("test_%02d", i), TestName: fmt.Sprintf("Test %d", i)})
	}
	subject, _ := events.TestingSubject(ws, events.TestingKindInvocation, invocation)
	meta := esproto.Meta(ctx, ws, "", time.Now())
	if _, err := esproto.Append(ctx, eventstore.New(js, events.TestingStream), subject, 0, meta, &testingv1.InvocationCreated{Meta: meta, Invocation: inv}); err != nil {
		t.Fatal(err)
	}
	runs := eventstore.New(js, events.TestRunsStream)
	for i, pt := range inv.Tests {
		run := &testingv1.RunResult{RunId: fmt.Sprintf("run_%02d", i), InvocationId: invocation, WorkspaceId: ws, TestId: pt.TestId, TestIndex: int32(i),
			Status: "failed", ConditionResult: "failure", RationaleSummary: "The agent does not cover it", FinishedAtUnixMs: time.Now().UnixMilli()}
		storeRun(t, runs, run)
	}
	// One more that passed, and one that errored: neither is a ticket.
	for i, r := range []*testingv1.RunResult{
		{Status: "passed", ConditionResult: "success"},
		{Status: "failed", ConditionResult: "unknown", Error: "model unreachable"},
	} {
		r.RunId, r.InvocationId, r.WorkspaceId, r.TestId = fmt.Sprintf("run_x%d", i), invocation, ws, "test_00"
		storeRun(t, runs, r)
	}

	log := slog.New(slog.DiscardHandler)
	idx := memory.NewIndex()
	a := app.New(eventstore.New(js, events.TicketsStream), idx, nil, log, time.Now)
	worker := func(ctx context.Context) <-chan error {
		w := &Worker{App: a, Feed: adapters.QAFeed{JS: js, Batch: 4, AckWait: time.Second}, Testing: eventstore.New(js, events.TestingStream), Log: log, Parallel: 2}
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		return done
	}
	tickets := func() []*ticketsv1.Ticket {
		page, _, err := idx.Page(ctx, app.Query{WorkspaceID: ws, Filter: app.Filter{Label: app.TestFailureLabel}, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		return page
	}

	// The first replica is killed once it has written some tickets.
	killed, kill := context.WithCancel(ctx)
	done := worker(killed)
	testkit.Eventually(t, 30*time.Second, "the first replica writes tickets", func() bool { return len(tickets()) >= 8 })
	kill()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	t.Logf("killed with %d of %d tickets written", len(tickets()), tests)

	next, stop := context.WithCancel(ctx)
	defer stop()
	done = worker(next)
	testkit.Eventually(t, 30*time.Second, "every failing test has its ticket", func() bool { return len(tickets()) == tests })
	// The clustering step has nothing to merge (every test differs), and
	// a redelivered failure changes nothing.
	if _, err := a.RecordTestFailures(ctx, app.FailingTest{WorkspaceID: ws, AgentID: agent, TestID: "test_07", TestName: "Test 7",
		Failures: []app.RunFailure{{InvocationID: invocation, RunID: "run_07", At: time.Now()}}}); err != nil {
		t.Fatal(err)
	}
	for _, tk := range tickets() {
		if tf := tk.TestFailures; tf == nil || tf.FailedRuns != 1 || len(tf.Invocations) != 1 || len(tf.Invocations[0].RunIds) != 1 {
			t.Fatalf("ticket %s: %v", tk.TicketId, tf)
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func connect(t *testing.T, url string) jetstream.JetStream { return testenv.JetStreamAt(t, url) }

// storeRun stores a run's result as the runners do: on the run's subject,
// and a failed one again on its failure subject.
func storeRun(t *testing.T, runs *eventstore.Store, r *testingv1.RunResult) {
	t.Helper()
	ctx := context.Background()
	subjects := []func(string, string, string) (string, error){events.RunSubject}
	if r.Status == events.RunStatusFailed {
		subjects = append(subjects, events.RunFailureSubject)
	}
	for _, subjectOf := range subjects {
		subject, _ := subjectOf(r.WorkspaceId, r.InvocationId, r.RunId)
		meta := esproto.Meta(ctx, r.WorkspaceId, "", time.Now())
		if _, err := esproto.Append(ctx, runs, subject, 0, meta, &testingv1.RunCompleted{Meta: meta, Run: r}); err != nil {
			t.Fatal(err)
		}
	}
}
