package qaworker

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	events "github.com/voiceai-platform/voiceai/proto-events"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/eventlog/memlog"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/pkg/tick"
	"github.com/voiceai-platform/voiceai/pkg/wire"
	"github.com/voiceai-platform/voiceai/services/tickets/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// The worker's rules on the memory adapters: a memory feed brings the
// messages, the tickets application runs on a memory log, index and
// directory. (worker_test.go runs the worker on JetStream.)

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

type fixture struct {
	app     *app.App
	tickets *flakyLog // the tickets' events
	testing *memlog.Store
	index   *memory.Index
	feed    *memory.QAFeed
	follows *flakyFeed // feed, as the worker follows it
}

// flakyLog is a memory log whose next appends can be made to fail, as
// a stream out of reach does.
type flakyLog struct {
	*memlog.Store
	failures atomic.Int32 // appends still to fail
}

func (l *flakyLog) Append(ctx context.Context, subject string, expected uint64, commandID string, ev eventlog.Event) (eventlog.Appended, error) {
	if l.failures.Add(-1) >= 0 {
		return eventlog.Appended{}, errors.New("the stream is out of reach")
	}
	return l.Store.Append(ctx, subject, expected, commandID, ev)
}

// flakyFeed is a feed whose next Follows can be made to fail at once,
// as one whose stream is out of reach as it starts does.
type flakyFeed struct {
	app.QAFeed
	failures atomic.Int32 // Follows still to fail
	follows  atomic.Int32
}

func (f *flakyFeed) Follow(ctx context.Context, source app.QASource, h func(context.Context, []app.QAMessage) error) error {
	f.follows.Add(1)
	if f.failures.Add(-1) >= 0 {
		return errors.New("the stream is out of reach")
	}
	return f.QAFeed.Follow(ctx, source, h)
}

// newFixture runs a worker until the test ends, over agent_1 of ws_a.
func newFixture(t *testing.T) *fixture { return newFixtureFailing(t, 0) }

// newFixtureFailing is newFixture with the feed's first follows failing.
func newFixtureFailing(t *testing.T, follows int32) *fixture {
	t.Helper()
	dir := memory.NewDirectory()
	dir.PutAgent(ws, agent)
	f := &fixture{tickets: &flakyLog{Store: memlog.New()}, testing: memlog.New(), index: memory.NewIndex(), feed: memory.NewQAFeed()}
	log := slog.New(slog.DiscardHandler)
	f.app = app.New(f.tickets, f.index, dir, log, time.Now)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	f.follows = &flakyFeed{QAFeed: f.feed}
	f.follows.failures.Store(follows)
	go func() {
		done <- (&Worker{App: f.app, Feed: f.follows, Testing: f.testing, Log: log, Parallel: 2}).Run(ctx)
	}()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return f
}

// handled waits until the worker has handled everything pushed to source.
func (f *fixture) handled(t *testing.T, source app.QASource) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, "the worker handles every "+string(source)+" message", func() bool { return f.feed.Pending(source) == 0 })
}

func (f *fixture) list(t *testing.T, filter app.Filter) []*ticketsv1.Ticket {
	t.Helper()
	page, _, err := f.index.Page(context.Background(), app.Query{WorkspaceID: ws, Filter: filter, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return page
}

// invocation stores an invocation of agent_1's tests on the testing log.
func (f *fixture) invocation(t *testing.T, tests ...*testingv1.PlannedTest) {
	t.Helper()
	ctx := context.Background()
	subject, _ := events.TestingSubject(ws, events.TestingKindInvocation, invocation)
	meta := esproto.Meta(ctx, ws, "", time.Now())
	inv := &testingv1.Invocation{InvocationId: invocation, WorkspaceId: ws, AgentId: agent, Tests: tests}
	if _, err := esproto.Append(ctx, f.testing, subject, 0, meta, &testingv1.InvocationCreated{Meta: meta, Invocation: inv}); err != nil {
		t.Fatal(err)
	}
}

// completed is r's message as the feed hands it over: a run stated
// passed comes undecoded.
func completed(r *testingv1.RunResult) app.QAMessage {
	r.InvocationId, r.WorkspaceId, r.FinishedAtUnixMs = invocation, ws, time.Now().UnixMilli()
	subject, _ := events.RunSubject(ws, invocation, r.RunId)
	m := app.QAMessage{Subject: subject, RunStatus: r.GetStatus()}
	if app.DecodesRun(m.RunStatus) {
		m.Event = &testingv1.RunCompleted{Run: r}
	}
	return m
}

func platform(event string, data map[string]any) app.QAMessage {
	raw, _ := json.Marshal(data)
	body, _ := json.Marshal(wire.Envelope{Event: event, Timestamp: wire.FormatTimestamp(time.Now()), Data: raw})
	subject, _ := events.PlatformSubject(ws, event)
	return app.QAMessage{Subject: subject, Data: body}
}

// A run that passed its condition but went over its test's latency
// budget opens the test's QA ticket like any failed run, and the ticket
// says the budget and the measured figure; a run of another test that
// passed within it opens nothing.
func TestABudgetFailureOpensItsTicket(t *testing.T) {
	f := newFixture(t)
	f.invocation(t, &testingv1.PlannedTest{TestId: "test_slow", TestName: "Opening hours, quickly"}, &testingv1.PlannedTest{TestId: "test_quick", TestName: "Greeting"})
	const why = "Time to first token p95 312 ms is over the test's budget of 100 ms. The agent states the opening hours."
	f.feed.Push(app.QARuns,
		completed(&testingv1.RunResult{RunId: "run_0", TestId: "test_slow", TestIndex: 0, Status: "failed", ConditionResult: "success", RationaleSummary: why,
			LatencyBudgetBreaches: []*testingv1.LatencyBudgetBreach{{Metric: "first_token_p95", MeasuredMs: 312, BudgetMs: 100}}}),
		completed(&testingv1.RunResult{RunId: "run_1", TestId: "test_quick", TestIndex: 1, Status: "passed", ConditionResult: "success", RationaleSummary: "Greets."}),
	)
	f.handled(t, app.QARuns)
	list := f.list(t, app.Filter{Label: app.TestFailureLabel})
	if len(list) != 1 {
		t.Fatalf("%d tickets, want the slow test's only", len(list))
	}
	tk := list[0]
	tf := tk.GetTestFailures()
	if tf.GetTestId() != "test_slow" || tf.GetTestName() != "Opening hours, quickly" || tf.GetFailedRuns() != 1 || !strings.Contains(tk.GetQaComment(), why) ||
		len(tk.GetTicketComments()) != 1 || !strings.Contains(tk.GetTicketComments()[0].GetComment(), "budget of 100 ms") {
		t.Fatalf("ticket %+v", tk)
	}
}

// Failed runs of one test, in one batch or several, make one ticket;
// a run of an invocation nobody knows and an undecodable one are
// skipped, not retried forever.
func TestFailedRunsKeepOneTicketPerTest(t *testing.T) {
	f := newFixture(t)
	f.invocation(t, &testingv1.PlannedTest{TestId: "test_refund", TestName: "Refund window"})
	fail := func(run string) app.QAMessage {
		return completed(&testingv1.RunResult{RunId: run, TestId: "test_refund", Status: "failed", ConditionResult: "failure", RationaleMessages: []string{"Quoted", "60 days."}})
	}
	orphan := completed(&testingv1.RunResult{RunId: "run_x", TestId: "test_refund", Status: "failed", ConditionResult: "failure"})
	orphan.Event.(*testingv1.RunCompleted).Run.InvocationId = "inv_unknown"
	f.feed.Push(app.QARuns, fail("run_1"), fail("run_2"), orphan, app.QAMessage{Subject: "testruns.evt.x", Err: errors.New("unknown event type")})
	f.feed.Push(app.QARuns, fail("run_3"), fail("run_2")) // run_2 again: a redelivery
	f.handled(t, app.QARuns)
	list := f.list(t, app.Filter{Label: app.TestFailureLabel})
	if len(list) != 1 || list[0].GetTestFailures().GetFailedRuns() != 3 || !strings.Contains(list[0].GetQaComment(), "Quoted 60 days.") {
		t.Fatalf("tickets %+v", list)
	}
}

// An escalation raises a ticket of source agent on its conversation, a
// conversation that ended after one joins it, one that ended with
// negative sentiment raises a QA ticket, and the rest raise nothing.
func TestConversationsThatWentWrongRaiseTickets(t *testing.T) {
	f := newFixture(t)
	score := -0.8
	f.feed.Push(app.QAPlatform,
		platform("escalation_triggered", map[string]any{"conversation_id": "conv_1", "agent_id": agent, "escalation_reason": "caller asked for a human", "target_queue": "billing"}),
		platform("conversation_ended", map[string]any{"conversation_id": "conv_1", "agent_id": agent, "escalation_occurred": true, "topics_discussed": []string{"refund"}}),
		platform("conversation_ended", map[string]any{"conversation_id": "conv_2", "agent_id": agent, "sentiment_analysis": map[string]any{"overall_sentiment": "neutral", "sentiment_score": score}}),
		platform("conversation_ended", map[string]any{"conversation_id": "conv_3", "agent_id": agent, "sentiment_analysis": map[string]any{"overall_sentiment": "positive"}}),
		platform("conversation_ended", map[string]any{"conversation_id": "conv_4", "agent_id": "agent_unknown", "escalation_occurred": true}), // refused: skipped
		app.QAMessage{Subject: "platform.evt.ws_a.escalation_triggered", Data: []byte("not json")},
	)
	f.handled(t, app.QAPlatform)
	byConv := map[string]*ticketsv1.Ticket{}
	list := f.list(t, app.Filter{})
	for _, tk := range list {
		for _, conv := range tk.GetConversationIds() {
			byConv[conv] = tk
		}
	}
	if len(list) != 2 || len(byConv) != 2 || byConv["conv_1"] == nil || byConv["conv_2"] == nil {
		t.Fatalf("tickets on %v, want one on conv_1 and one on conv_2", byConv)
	}
	escalated, negative := byConv["conv_1"], byConv["conv_2"]
	if escalated.GetSource() != domain.SourceAgent || !strings.Contains(escalated.GetQaComment(), "escalated the conversation to billing: caller asked for a human (trigger: (not given))") {
		t.Fatalf("the escalation's ticket: %+v", escalated)
	}
	if negative.GetSource() != domain.SourceQA || !strings.Contains(negative.GetQaComment(), "negative sentiment (score -0.80)") {
		t.Fatalf("the negative conversation's ticket: %+v", negative)
	}
}

// A batch that fails for a reason a retry can fix (the stream out of
// reach) is delivered again until its ticket is written.
func TestAFailedBatchIsRetried(t *testing.T) {
	f := newFixture(t)
	f.tickets.failures.Store(2)
	f.feed.Push(app.QAPlatform, platform("escalation_triggered", map[string]any{"conversation_id": "conv_1", "agent_id": agent}))
	f.handled(t, app.QAPlatform)
	if list := f.list(t, app.Filter{}); len(list) != 1 || f.tickets.failures.Load() >= 0 {
		t.Fatalf("%d tickets after the stream came back (failures left %d)", len(list), f.tickets.failures.Load())
	}
}

// A source the feed stops following (its stream out of reach as it
// starts) is followed again after a back-off, and the others go on
// meanwhile: the worker never stops for good while its process says it
// is ready.
func TestASourceThatStopsIsFollowedAgain(t *testing.T) {
	defer func(was tick.Backoff) { restarting = was }(restarting)
	restarting.First = 10 * time.Millisecond
	f := newFixtureFailing(t, 4) // each source's first follow, and one more
	f.feed.Push(app.QAPlatform, platform("escalation_triggered", map[string]any{"conversation_id": "conv_1", "agent_id": agent}))
	f.handled(t, app.QAPlatform)
	if list := f.list(t, app.Filter{}); len(list) != 1 {
		t.Fatalf("%d tickets once the source is followed again", len(list))
	}
	// Each source's failed follow, one more failed, then each followed.
	testkit.Eventually(t, 10*time.Second, "every source followed again", func() bool { return f.follows.follows.Load() == 7 })
}

// A ticket that needs clustering, told on the tickets' own source, has
// its agent's tickets clustered: an exact duplicate is merged.
func TestATicketThatNeedsClusteringHasItsAgentClustered(t *testing.T) {
	f := newFixture(t)
	for _, conv := range []string{"conv_1", "conv_2"} {
		f.feed.Push(app.QAPlatform, platform("escalation_triggered", map[string]any{"conversation_id": conv, "agent_id": agent, "escalation_reason": "caller asked for a human"}))
	}
	f.handled(t, app.QAPlatform)
	// The tickets' events, as the feed hands them over: decoded where the
	// ticket needs clustering, as the escalations' tickets do.
	ctx := context.Background()
	decoded := 0
	for seq := uint64(1); ; seq++ {
		rec, err := f.tickets.At(ctx, seq)
		if err != nil {
			break
		}
		m := app.QAMessage{Subject: rec.Subject, Seq: rec.Seq}
		if app.DecodesTicket(rec.Type, rec.Data) {
			m.Event, m.Err = esproto.Decode(rec)
			decoded++
		}
		f.feed.Push(app.QATickets, m)
	}
	if decoded == 0 {
		t.Fatal("no ticket event the feed would decode")
	}
	// One it passed by, undecoded, is passed by here too.
	f.feed.Push(app.QATickets, app.QAMessage{Subject: "tickets.evt.ws_a.tkt_other", Seq: 1 << 20})
	f.handled(t, app.QATickets)
	var merged int
	for _, tk := range f.list(t, app.Filter{}) {
		if tk.GetStatus() == domain.StatusMerged {
			merged++
		}
	}
	if merged != 1 {
		t.Fatalf("%d of the two duplicates merged, want 1", merged)
	}
}

// A batch's workspaces take turns: one workspace's flood of conversations
// does not hold another's behind all of its own.
func TestWorkspacesTakeTurns(t *testing.T) {
	got := inTurns([]string{"a1", "a2", "a3", "a4", "b1", "c1", "b2"}, func(s string) string { return s[:1] })
	if want := "a1 b1 c1 a2 b2 a3 a4"; strings.Join(got, " ") != want {
		t.Fatalf("order %v, want %s", got, want)
	}
}
