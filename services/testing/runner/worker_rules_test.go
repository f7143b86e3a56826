package runner_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/testing/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
	"github.com/voiceai-platform/voiceai/services/testing/model"
	"github.com/voiceai-platform/voiceai/services/testing/offline"
	"github.com/voiceai-platform/voiceai/services/testing/runner"
)

// The rules of a runner's jobs (run, store, retry, give up, cancel, drop),
// on the memory adapters: a worker drives the app and the runner ports of
// memory.Ports, as it drives JetStream's in a runner process.

// memWorld is the testing service in memory, its enqueuer following the
// invocation events.
type memWorld struct {
	t      *testing.T
	ctx    context.Context
	p      *memory.Ports
	a      *app.App
	caller principal.Caller
	test   string
}

func newMemWorld(t *testing.T) *memWorld {
	t.Helper()
	return newMemWorldWith(t, nil)
}

// newMemWorldWith is newMemWorld with the app's ports edited first.
func newMemWorldWith(t *testing.T, edit func(*app.Ports)) *memWorld {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	p := memory.NewPorts(time.Now)
	ports := p.Ports()
	if edit != nil {
		edit(&ports)
	}
	a := app.New(ports, memory.NewIndex(), slog.New(slog.DiscardHandler), time.Now)
	w := &memWorld{t: t, ctx: ctx, p: p, a: a,
		caller: principal.Caller{Principal: principal.Principal{WorkspaceID: "ws", UserID: "u1", Email: "u1@example.com"}}}
	subject, _ := events.AgentSubject("ws", "agent_1")
	meta := esproto.Meta(ctx, "ws", "", time.Now())
	if _, err := esproto.Append(ctx, p.Agents, subject, 0, meta, &agentsv1.AgentCreated{Meta: meta,
		Agent: &agentsv1.Agent{AgentId: "agent_1", WorkspaceId: "ws", Name: "Front desk"}}); err != nil {
		t.Fatal(err)
	}
	test, err := a.CreateTest(ctx, w.caller, []byte(`{"type":"llm","name":"Opening hours","success_condition":"states the hours"}`))
	if err != nil {
		t.Fatal(err)
	}
	w.test = test.GetTestId()
	go func() { _ = a.RunEnqueuer(ctx) }()
	return w
}

// invoke runs the test repeat times and waits for its jobs to be queued.
// feedInvocation hands the invocation's last event to the enqueuer's
// feed, as the stream would.
func (w *memWorld) feedInvocation(inv *testingv1.Invocation) {
	w.t.Helper()
	subject, _ := events.TestingSubject("ws", events.TestingKindInvocation, inv.GetInvocationId())
	rec, _, err := w.p.Testing.Last(w.ctx, subject)
	if err != nil {
		w.t.Fatal(err)
	}
	w.p.Feed.Append(rec)
}

func (w *memWorld) invoke(repeat int) *testingv1.Invocation {
	w.t.Helper()
	inv, err := w.a.RunTests(w.ctx, w.caller, "agent_1", app.RunTestsInput{Tests: []app.TestRef{{TestID: w.test}}, RepeatCount: &repeat})
	if err != nil {
		w.t.Fatal(err)
	}
	w.feedInvocation(inv)
	testkit.Eventually(w.t, 10*time.Second, "the invocation's jobs queued", func() bool { return w.waiting(inv) })
	return inv
}

func (w *memWorld) waiting(inv *testingv1.Invocation) bool {
	filter, _ := events.TestJobsOfInvocation("ws", inv.GetInvocationId())
	ok, err := w.p.Jobs.Waiting(w.ctx, filter)
	if err != nil {
		w.t.Fatal(err)
	}
	return ok
}

// start runs a worker on the memory ports until the test ends.
func (w *memWorld) start(ports app.RunnerPorts, tune func(*runner.Worker)) {
	w.t.Helper()
	w.startWith(ports, offline.Model{}, tune)
}

func (w *memWorld) startWith(ports app.RunnerPorts, m runner.Model, tune func(*runner.Worker)) {
	w.t.Helper()
	wk := &runner.Worker{App: w.a, Ports: ports, Exec: &runner.Executor{Now: time.Now, Model: m},
		Concurrency: 2, Log: slog.New(slog.DiscardHandler), RetryDelay: time.Millisecond}
	if tune != nil {
		tune(wk)
	}
	ctx, cancel := context.WithCancel(w.ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = wk.Run(ctx) }()
	w.t.Cleanup(func() { cancel(); <-done })
}

func (w *memWorld) get(inv *testingv1.Invocation) *testingv1.Invocation {
	w.t.Helper()
	got, _, err := w.a.Invocations.Get(w.ctx, "ws", inv.GetInvocationId())
	if err != nil {
		w.t.Fatal(err)
	}
	return got
}

// results are the invocation's stored results, by run id (the last of each).
func (w *memWorld) results(inv *testingv1.Invocation) map[string]*testingv1.RunResult {
	w.t.Helper()
	out := map[string]*testingv1.RunResult{}
	if err := w.a.EachRunResult(w.ctx, w.get(inv), func(r *testingv1.RunResult) error { out[r.GetRunId()] = r; return nil }); err != nil {
		w.t.Fatal(err)
	}
	return out
}

// takeBack delivers the invocation's jobs once more than they were,
// as a runner that died holding them would have.
func (w *memWorld) takeBack(inv *testingv1.Invocation) {
	w.t.Helper()
	q := w.p.RunnerPorts().Queues
	jobs, err := q.Take(w.ctx, app.RunQueue{Workspace: "ws", Invocation: inv.GetInvocationId()}, 100)
	if err != nil || len(jobs) == 0 {
		w.t.Fatalf("took %d jobs, %v", len(jobs), err)
	}
	for _, j := range jobs {
		_ = j.Retry(0)
	}
}

// Every run of an invocation gets one result, each job is done, the
// counters complete the invocation and its results are grouped.
func TestAWorkerRunsAnInvocationToItsEnd(t *testing.T) {
	w := newMemWorld(t)
	inv := w.invoke(3)
	w.start(w.p.RunnerPorts(), nil)
	testkit.Eventually(t, 10*time.Second, "the invocation completed and grouped", func() bool {
		got := w.get(inv)
		return got.GetStatus() == domain.InvocationCompleted && got.GetBucketingStatus() == domain.BucketingCompleted
	})
	got := w.get(inv)
	if res := w.results(inv); len(res) != 3 || got.GetPassedCount()+got.GetFailedCount() != 3 {
		t.Fatalf("%d results, passed %d failed %d", len(res), got.GetPassedCount(), got.GetFailedCount())
	}
	if w.waiting(inv) || w.p.Jobs.Out() != 0 || len(w.p.Jobs.Dropped()) != 0 {
		t.Fatalf("jobs left: waiting %v, held %d, dropped %d", w.waiting(inv), w.p.Jobs.Out(), len(w.p.Jobs.Dropped()))
	}
}

// countingModel is the offline model counting the agent turns it plays.
type countingModel struct {
	offline.Model
	turns *atomic.Int32
}

func (m countingModel) Respond(ctx context.Context, c runner.Conversation) (runner.Turn, runner.Usage, error) {
	m.turns.Add(1)
	return m.Model.Respond(ctx, c)
}

// A job delivered again (its runner died) runs only the runs with no
// result of its attempt: a run is never run twice.
func TestARedeliveredJobSkipsTheRunsItStored(t *testing.T) {
	w := newMemWorld(t)
	inv := w.invoke(2) // two jobs of one run each
	// The first runner stored run 0's result before it died.
	runID := domain.RunID(inv.GetInvocationId(), 0)
	earlier := &testingv1.RunResult{RunId: runID, InvocationId: inv.GetInvocationId(), WorkspaceId: "ws", Attempt: 1,
		Status: domain.RunPassed, WorkerId: "wrk_dead", AgentResponsesJson: []byte("[]")}
	msgs, err := w.a.RunResultMessages(w.ctx, &testingv1.RunJob{WorkspaceId: "ws", InvocationId: inv.GetInvocationId(), Attempt: 1}, earlier)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.p.Runs.Publish(w.ctx, msgs[0]); err != nil {
		t.Fatal(err)
	}
	w.takeBack(inv)
	var turns atomic.Int32
	w.startWith(w.p.RunnerPorts(), countingModel{turns: &turns}, nil)
	testkit.Eventually(t, 10*time.Second, "the redelivered job done", func() bool { return !w.waiting(inv) })
	res := w.results(inv)
	if len(res) != 2 || res[runID].GetWorkerId() != "wrk_dead" || turns.Load() != 1 {
		t.Fatalf("%d results, run 0 by %q, %d runs played; want run 1 alone played", len(res), res[runID].GetWorkerId(), turns.Load())
	}
}

// A runner that died between storing a failed run's result and its
// failure notice left the notice unstored: the job delivered again
// stores it, without running the run again or counting it twice.
func TestARedeliveredJobStoresTheFailureNoticeItsRunnerDidNot(t *testing.T) {
	w := newMemWorld(t)
	inv := w.invoke(2)
	runID := domain.RunID(inv.GetInvocationId(), 0)
	earlier := &testingv1.RunResult{RunId: runID, InvocationId: inv.GetInvocationId(), WorkspaceId: "ws", Attempt: 1,
		Status: domain.RunFailed, ConditionResult: domain.ConditionFailure, WorkerId: "wrk_dead", AgentResponsesJson: []byte("[]")}
	msgs, err := w.a.RunResultMessages(w.ctx, &testingv1.RunJob{WorkspaceId: "ws", InvocationId: inv.GetInvocationId(), Attempt: 1}, earlier)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("%d messages, %v", len(msgs), err)
	}
	if _, err := w.p.Runs.Publish(w.ctx, msgs[0]); err != nil { // the result alone
		t.Fatal(err)
	}
	w.takeBack(inv)
	var turns atomic.Int32
	w.startWith(w.p.RunnerPorts(), countingModel{turns: &turns}, nil)
	testkit.Eventually(t, 10*time.Second, "the invocation completed", func() bool { return w.get(inv).GetStatus() == domain.InvocationCompleted })
	if !w.noticed(inv, runID) || turns.Load() != 1 {
		t.Fatalf("notice of run 0 stored: %v; %d runs played (want run 1 alone)", w.noticed(inv, runID), turns.Load())
	}
	if got := w.get(inv); got.GetPassedCount()+got.GetFailedCount() != 2 || got.GetFailedCount() < 1 {
		t.Fatalf("passed %d failed %d; want two runs counted, run 0 failed", got.GetPassedCount(), got.GetFailedCount())
	}
}

// noticed says whether the run's failure notice is stored.
func (w *memWorld) noticed(inv *testingv1.Invocation, runID string) bool {
	w.t.Helper()
	subject, _ := events.RunFailureSubject("ws", inv.GetInvocationId(), runID)
	_, found, err := w.p.Runs.Last(w.ctx, subject)
	if err != nil {
		w.t.Fatal(err)
	}
	return found
}

// A job delivered more than MaxAttempts times ends: its runs are
// recorded failed with the reason, and the invocation completes.
func TestAJobDeliveredTooOftenIsGivenUp(t *testing.T) {
	w := newMemWorld(t)
	inv := w.invoke(2)
	w.takeBack(inv)
	w.takeBack(inv)
	w.start(w.p.RunnerPorts(), func(wk *runner.Worker) { wk.MaxAttempts = 2 })
	testkit.Eventually(t, 10*time.Second, "the invocation completed", func() bool { return w.get(inv).GetStatus() == domain.InvocationCompleted })
	res := w.results(inv)
	for _, r := range res {
		if r.GetStatus() != domain.RunFailed || !strings.Contains(r.GetError(), "started 2 times without finishing") {
			t.Fatalf("run %s: %s %q", r.GetRunId(), r.GetStatus(), r.GetError())
		}
	}
	if len(res) != 2 || w.get(inv).GetFailedCount() != 2 {
		t.Fatalf("%d results, %d failed", len(res), w.get(inv).GetFailedCount())
	}
	for runID := range res {
		if !w.noticed(inv, runID) {
			t.Fatalf("run %s failed with no failure notice stored", runID)
		}
	}
}

// unreadable is a store whose reads of invocations fail while down is
// set; reads counts those it failed.
type unreadable struct {
	eventlog.Store
	down  atomic.Bool
	reads atomic.Int32
}

func (u *unreadable) Last(ctx context.Context, subject string) (eventlog.Record, bool, error) {
	if u.down.Load() && strings.Contains(subject, "."+events.TestingKindInvocation+".") {
		u.reads.Add(1)
		return eventlog.Record{}, false, errors.New("the store is down")
	}
	return u.Store.Last(ctx, subject)
}

// A job given up while its invocation cannot be read records nothing
// (a result would name no test, and its run's index for one): it is
// given up again once the invocation reads, each run failed under its
// own test.
func TestAJobGivenUpWaitsForItsInvocation(t *testing.T) {
	store := &unreadable{}
	w := newMemWorldWith(t, func(p *app.Ports) { store.Store = p.Testing; p.Testing = store })
	inv := w.invoke(2)
	w.takeBack(inv)
	w.takeBack(inv)
	store.down.Store(true)
	w.start(w.p.RunnerPorts(), func(wk *runner.Worker) { wk.MaxAttempts = 2 })
	testkit.Eventually(t, 10*time.Second, "the give-up tried again", func() bool { return store.reads.Load() >= 2 })
	stored := 0 // read with the invocation as invoked: the store is down
	if err := w.a.EachRunResult(w.ctx, inv, func(*testingv1.RunResult) error { stored++; return nil }); err != nil || stored != 0 {
		t.Fatalf("%d results stored without the invocation, %v", stored, err)
	}
	store.down.Store(false)
	testkit.Eventually(t, 10*time.Second, "the invocation completed", func() bool { return w.get(inv).GetStatus() == domain.InvocationCompleted })
	res := w.results(inv)
	for i := range 2 {
		r := res[domain.RunID(inv.GetInvocationId(), i)]
		if r.GetStatus() != domain.RunFailed || r.GetTestId() != w.test || r.GetTestIndex() != 0 || r.GetRepeatIndex() != int32(i) {
			t.Fatalf("run %d: %s, test %q index %d, repeat %d; want failed under test %s index 0", i, r.GetStatus(), r.GetTestId(),
				r.GetTestIndex(), r.GetRepeatIndex(), w.test)
		}
	}
}

// A job given up whose invocation does not exist is dropped: it has no
// test to record its runs under, and nothing would read them.
func TestAJobGivenUpOfNoInvocationIsDropped(t *testing.T) {
	w := newMemWorld(t)
	id := "tinv_none"
	subject, _ := events.TestJobSubject("ws", id, "run-0")
	w.givenUpAndDropped(subject, &testingv1.RunJob{WorkspaceId: "ws", InvocationId: id, Kind: "run", RunId: domain.RunID(id, 0), Attempt: 1})
	stored := 0
	inv := &testingv1.Invocation{WorkspaceId: "ws", InvocationId: id}
	if err := w.a.EachRunResult(w.ctx, inv, func(*testingv1.RunResult) error { stored++; return nil }); err != nil || stored != 0 {
		t.Fatalf("%d results stored for no invocation, %v", stored, err)
	}
}

// A load job given up whose invocation does not exist is dropped too:
// its callers' failed turns count for no invocation (before, it stored
// them as one turn per caller).
func TestALoadJobGivenUpOfNoInvocationIsDropped(t *testing.T) {
	w := newMemWorld(t)
	id := "tinv_none"
	subject, _ := events.LoadJobSubject("ws", id, 0, 0)
	w.givenUpAndDropped(subject, &testingv1.RunJob{WorkspaceId: "ws", InvocationId: id, Kind: domain.JobLoad, Attempt: 1, LoadCallers: 3})
}

// A job given up whose invocation does not read, though the job was
// queued moments ago, is not dropped: the read may be stale (a store
// between leaders), and the job is given up again later, its runs then
// recorded failed under their tests.
func TestAJobGivenUpQueuedMomentsAgoIsNotDroppedForAnInvocationNotRead(t *testing.T) {
	w := newMemWorld(t)
	id := "tinv_none"
	subject, _ := events.TestJobSubject("ws", id, "run-0")
	w.queueOrphan(subject, &testingv1.RunJob{WorkspaceId: "ws", InvocationId: id, Kind: "run", RunId: domain.RunID(id, 0), Attempt: 1})
	w.start(w.p.RunnerPorts(), func(wk *runner.Worker) { wk.MaxAttempts = 1 })
	testkit.Eventually(t, 10*time.Second, "the job given up again", func() bool { return w.p.Jobs.Deliveries("orphan-run") >= 3 })
	if dropped := w.p.Jobs.Dropped(); len(dropped) != 0 {
		t.Fatalf("a given-up job of an invocation made moments ago was dropped on a read that may be stale: %v", dropped)
	}
}

// queueOrphan queues job on subject, of no invocation there is.
func (w *memWorld) queueOrphan(subject string, job *testingv1.RunJob) {
	w.t.Helper()
	data, err := proto.Marshal(job)
	if err != nil {
		w.t.Fatal(err)
	}
	if err := w.p.Jobs.Enqueue(w.ctx, 1, func(int) (app.Message, error) {
		return app.Message{Subject: subject, ID: "orphan-" + job.GetKind(), Data: data}, nil
	}); err != nil {
		w.t.Fatal(err)
	}
}

// givenUpAndDropped queues job on subject as 11 minutes ago, runs a
// worker that gives a job up at its first delivery, and waits for the
// job to be dropped.
func (w *memWorld) givenUpAndDropped(subject string, job *testingv1.RunJob) {
	w.t.Helper()
	w.p.Jobs.Now = func() time.Time { return time.Now().Add(-11 * time.Minute) } // before any job is queued or taken
	w.queueOrphan(subject, job)
	w.start(w.p.RunnerPorts(), func(wk *runner.Worker) { wk.MaxAttempts = 1 })
	testkit.Eventually(w.t, 10*time.Second, "the job dropped", func() bool { return len(w.p.Jobs.Dropped()) == 1 })
}

// A job whose result the runs log refused is given back and run again;
// its runs end with one result each.
func TestAJobWhoseResultWasNotStoredIsRetried(t *testing.T) {
	w := newMemWorld(t)
	inv := w.invoke(1)
	ports := w.p.RunnerPorts()
	var refused atomic.Int32
	ports.Results.(*memory.ResultStore).Fail = func(app.Message) error {
		if refused.Add(1) == 1 {
			return errors.New("the log is down")
		}
		return nil
	}
	w.start(ports, nil)
	testkit.Eventually(t, 10*time.Second, "the invocation completed", func() bool { return w.get(inv).GetStatus() == domain.InvocationCompleted })
	filter, _ := events.TestJobsOfInvocation("ws", inv.GetInvocationId())
	jobs := 0
	for _, m := range append(w.p.Jobs.Snapshot(), w.p.Jobs.Dropped()...) {
		if events.SubjectMatches(filter, m.Subject) {
			jobs++
		}
	}
	if refused.Load() < 2 || len(w.results(inv)) != 1 || jobs != 0 {
		t.Fatalf("stores tried %d, results %d, jobs left %d", refused.Load(), len(w.results(inv)), jobs)
	}
}

// heldThroughPurge is a job queue whose purge misses the jobs: what a
// runner holding them when the invocation is cancelled sees.
type heldThroughPurge struct{ app.JobQueue }

func (heldThroughPurge) Purge(context.Context, string) error { return nil }

// A cancelled invocation's job runs none of its runs not started, and is
// done.
func TestACancelledInvocationsJobRunsNothing(t *testing.T) {
	w := newMemWorldWith(t, func(p *app.Ports) { p.Jobs = heldThroughPurge{p.Jobs} })
	inv := w.invoke(2)
	if _, err := w.a.Cancel(w.ctx, w.caller, inv.GetInvocationId()); err != nil {
		t.Fatal(err)
	}
	w.start(w.p.RunnerPorts(), nil)
	testkit.Eventually(t, 10*time.Second, "the jobs done", func() bool { return !w.waiting(inv) && w.p.Jobs.Out() == 0 })
	if res := w.results(inv); len(res) != 0 {
		t.Fatalf("%d runs of a cancelled invocation ran", len(res))
	}
}

// busyEndpoint plays an agent whose endpoint is busy: each run's agent
// turn waits in its queue until open closes, then asks whether the run is
// still wanted, as the endpoint clients do, before answering as the
// offline model does.
type busyEndpoint struct {
	offline.Model
	queued  chan struct{} // a run is waiting
	open    chan struct{}
	decided chan bool // a run let in (true) or dropped
}

func (b busyEndpoint) Respond(ctx context.Context, c model.Conversation) (model.Turn, model.Usage, error) {
	b.queued <- struct{}{}
	<-b.open
	proceed := model.Proceed(ctx, true)
	b.decided <- proceed
	if !proceed {
		return model.Turn{}, model.Usage{}, model.ErrNotWanted
	}
	return b.Model.Respond(ctx, c)
}

// Runs queued on their agent's busy endpoint when the invocation is
// cancelled have not started: none is recorded, and the invocation's
// runs stay cancelled, where they turned passed once the endpoint let
// them in.
func TestRunsQueuedOnABusyEndpointStopWithACancel(t *testing.T) {
	w := newMemWorld(t)
	inv := w.invoke(2)
	busy := busyEndpoint{queued: make(chan struct{}, 2), open: make(chan struct{}), decided: make(chan bool, 2)}
	w.startWith(w.p.RunnerPorts(), busy, nil)
	for range 2 { // the worker's two slots: both runs wait on the endpoint
		<-busy.queued
	}
	if _, err := w.a.Cancel(w.ctx, w.caller, inv.GetInvocationId()); err != nil {
		t.Fatal(err)
	}
	close(busy.open)
	for range 2 {
		if <-busy.decided {
			t.Fatal("a run queued on the endpoint at the cancel was let in")
		}
	}
	testkit.Eventually(t, 10*time.Second, "the jobs done", func() bool { return !w.waiting(inv) && w.p.Jobs.Out() == 0 })
	if res := w.results(inv); len(res) != 0 {
		t.Fatalf("%d runs queued on the endpoint at the cancel were recorded", len(res))
	}
	if got := w.get(inv); got.GetStatus() != domain.InvocationCancelled || got.GetPassedCount()+got.GetFailedCount() != 0 {
		t.Fatalf("the invocation %s with %d passed, %d failed", got.GetStatus(), got.GetPassedCount(), got.GetFailedCount())
	}
}

// resubmit runs the invocation's run idx again and has the enqueuer queue
// it.
func (w *memWorld) resubmit(inv *testingv1.Invocation, idx int) {
	w.t.Helper()
	in := app.ResubmitInput{TestRunIDs: []string{domain.RunID(inv.GetInvocationId(), idx)}, AgentID: "agent_1"}
	if _, err := w.a.Resubmit(w.ctx, w.caller, inv.GetInvocationId(), in); err != nil {
		w.t.Fatal(err)
	}
	w.feedInvocation(inv)
}

// The jobs of a round the user cancelled (queued after the cancel's
// purge, or held through it) run nothing once a resubmission has the
// invocation running again, nor are they given up as failed: only the
// resubmitted run runs, the others stay cancelled and are not counted.
func TestACancelledRoundsJobsRunNothingOnceResubmitted(t *testing.T) {
	for _, tc := range []struct {
		name    string
		givenUp bool // the round's jobs were delivered too often before
	}{{"run", false}, {"given up", true}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newMemWorldWith(t, func(p *app.Ports) { p.Jobs = heldThroughPurge{p.Jobs} })
			inv := w.invoke(3)
			if _, err := w.a.Cancel(w.ctx, w.caller, inv.GetInvocationId()); err != nil {
				t.Fatal(err)
			}
			if tc.givenUp {
				w.takeBack(inv)
				w.takeBack(inv)
			}
			w.resubmit(inv, 0)
			var turns atomic.Int32
			w.startWith(w.p.RunnerPorts(), countingModel{turns: &turns}, func(wk *runner.Worker) { wk.MaxAttempts = 2 })
			testkit.Eventually(t, 10*time.Second, "the resubmission completed", func() bool { return w.get(inv).GetStatus() == domain.InvocationCompleted })
			got, res := w.get(inv), w.results(inv)
			run0 := res[domain.RunID(inv.GetInvocationId(), 0)]
			if len(res) != 1 || run0.GetAttempt() != 2 || turns.Load() != 1 || got.GetPassedCount()+got.GetFailedCount() != 1 {
				t.Fatalf("%d results (run 0 of attempt %d), %d runs played, passed %d failed %d; want run 0's attempt 2 alone",
					len(res), run0.GetAttempt(), turns.Load(), got.GetPassedCount(), got.GetFailedCount())
			}
		})
	}
}

// lagging is a testing log whose reads of invocations answer the record
// pinned while one is: a store (a replica between leaders) that has not
// caught up with the newest event. reads counts them.
type lagging struct {
	eventlog.Store
	mu     sync.Mutex
	pinned *eventlog.Record
	reads  atomic.Int32
}

func (l *lagging) pin(rec *eventlog.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pinned = rec
}

func (l *lagging) Last(ctx context.Context, subject string) (eventlog.Record, bool, error) {
	l.mu.Lock()
	pinned := l.pinned
	l.mu.Unlock()
	if pinned != nil && pinned.Subject == subject {
		l.reads.Add(1)
		return *pinned, true, nil
	}
	return l.Store.Last(ctx, subject)
}

// A job's round is stored before its jobs are queued, so an invocation
// read without the job's round is a stale read: the job is tried again
// until the store answers the round, then run. Before, it was taken for
// a round before the running one and settled with its run never played,
// the invocation left running for good.
func TestAJobWhoseInvocationReadsWithoutItsRoundIsTriedAgain(t *testing.T) {
	w := newMemWorld(t)
	inv := w.invoke(1)
	if _, err := w.a.Cancel(w.ctx, w.caller, inv.GetInvocationId()); err != nil {
		t.Fatal(err)
	}
	subject, _ := events.TestingSubject("ws", events.TestingKindInvocation, inv.GetInvocationId())
	cancelled, _, err := w.p.Testing.Last(w.ctx, subject)
	if err != nil {
		t.Fatal(err)
	}
	w.resubmit(inv, 0) // the enqueuer, reading the store whole, queues round 2
	testkit.Eventually(t, 10*time.Second, "round 2 queued", func() bool { return w.waiting(inv) })

	// The worker reads a replica still at the cancel.
	stale := &lagging{Store: w.p.Testing}
	stale.pin(&cancelled)
	ports := w.p.Ports()
	ports.Testing = stale
	behind := app.New(ports, memory.NewIndex(), slog.New(slog.DiscardHandler), time.Now)
	var turns atomic.Int32
	w.startWith(w.p.RunnerPorts(), countingModel{turns: &turns}, func(wk *runner.Worker) {
		wk.App = behind
		wk.MaxAttempts = 1 << 20 // tried again as often as it takes, never given up here
	})
	testkit.Eventually(t, 10*time.Second, "the job tried again", func() bool { return stale.reads.Load() >= 4 })
	if turns.Load() != 0 || (!w.waiting(inv) && w.p.Jobs.Out() == 0) {
		t.Fatalf("the job of round 2 was settled on a read of round 1 (%d runs played)", turns.Load())
	}

	stale.pin(nil) // caught up
	testkit.Eventually(t, 10*time.Second, "round 2 completed", func() bool { return w.get(inv).GetStatus() == domain.InvocationCompleted })
	if run0 := w.results(inv)[domain.RunID(inv.GetInvocationId(), 0)]; run0.GetAttempt() != 2 || turns.Load() != 1 {
		t.Fatalf("run 0 of attempt %d, %d runs played; want attempt 2's, played once", run0.GetAttempt(), turns.Load())
	}
}

// gatedModel is the offline model holding its first agent turn until
// release is closed, entered closed once it holds it.
type gatedModel struct {
	offline.Model
	entered, release chan struct{}
	first            *atomic.Bool
}

func (m gatedModel) Respond(ctx context.Context, c runner.Conversation) (runner.Turn, runner.Usage, error) {
	if m.first.CompareAndSwap(false, true) {
		close(m.entered)
		select {
		case <-m.release:
		case <-ctx.Done():
		}
	}
	return m.Model.Respond(ctx, c)
}

// A run in flight when its invocation is cancelled, then resubmitted,
// finishes after the newer attempt: its result is not stored over the
// newer one's, which stays the run's result.
func TestARunInFlightThroughAResubmissionLeavesTheNewerResult(t *testing.T) {
	w := newMemWorld(t)
	inv := w.invoke(1)
	m := gatedModel{entered: make(chan struct{}), release: make(chan struct{}), first: &atomic.Bool{}}
	w.startWith(w.p.RunnerPorts(), m, nil)
	select {
	case <-m.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the run never started")
	}
	if _, err := w.a.Cancel(w.ctx, w.caller, inv.GetInvocationId()); err != nil {
		t.Fatal(err)
	}
	w.resubmit(inv, 0)
	runID := domain.RunID(inv.GetInvocationId(), 0)
	testkit.Eventually(t, 10*time.Second, "the resubmitted run stored", func() bool { return w.results(inv)[runID].GetAttempt() == 2 })
	close(m.release)
	testkit.Eventually(t, 10*time.Second, "the invocation completed", func() bool {
		return w.get(inv).GetStatus() == domain.InvocationCompleted && !w.waiting(inv) && w.p.Jobs.Out() == 0
	})
	var shown *testingv1.RunResult
	if _, err := w.a.EachRun(w.ctx, w.get(inv), false, nil, func(_ int, _ string, res *testingv1.RunResult, _ string) error {
		shown = res
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if last := w.results(inv)[runID]; last.GetAttempt() != 2 || shown.GetAttempt() != 2 {
		t.Fatalf("run 0's last result is of attempt %d, shown of attempt %d; want attempt 2's", last.GetAttempt(), shown.GetAttempt())
	}
}

// A job that is no run job (undecodable) is dropped, never retried.
func TestAnUndecodableJobIsDropped(t *testing.T) {
	w := newMemWorld(t)
	subject, _ := events.TestJobSubject("ws", "tinv_junk", "run-0")
	if err := w.p.Jobs.Enqueue(w.ctx, 1, func(int) (app.Message, error) {
		return app.Message{Subject: subject, ID: "junk", Data: []byte{0xff, 0xff, 0xff}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	w.start(w.p.RunnerPorts(), nil)
	testkit.Eventually(t, 10*time.Second, "the job dropped", func() bool { return len(w.p.Jobs.Dropped()) == 1 })
	if n := w.p.Jobs.Deliveries("junk"); n != 1 {
		t.Fatalf("delivered %d times", n)
	}
}

// slowInvocations is the testing log with slow reads of invocations,
// counted: a store under load.
type slowInvocations struct {
	eventlog.Store
	reads *atomic.Int32
}

func (s slowInvocations) Last(ctx context.Context, subject string) (eventlog.Record, bool, error) {
	if strings.Contains(subject, "."+events.TestingKindInvocation+".") {
		s.reads.Add(1)
		time.Sleep(50 * time.Millisecond) // the store's pace, not a wait for an outcome
	}
	return s.Store.Last(ctx, subject)
}

// The runs a worker starts together all need their invocation at once:
// one of them reads it for all, however many there are.
func TestRunsStartedTogetherReadTheirInvocationOnce(t *testing.T) {
	var reads atomic.Int32
	w := newMemWorldWith(t, func(p *app.Ports) { p.Testing = slowInvocations{Store: p.Testing, reads: &reads} })
	inv := w.invoke(16) // sixteen jobs of one run
	before := reads.Load()
	w.start(w.p.RunnerPorts(), func(wk *runner.Worker) { wk.Concurrency = 16 })
	// Waited for without reading the invocation: only the worker does.
	testkit.Eventually(t, 10*time.Second, "every job done", func() bool { return !w.waiting(inv) && w.p.Jobs.Out() == 0 })
	// The runs' one read, and the few of finishing the invocation.
	if n := reads.Load() - before; n > 6 {
		t.Fatalf("the invocation was read %d times for 16 runs started together", n)
	}
}

// A held worker (its disk nearly full) takes no job: the invocation's
// jobs wait on their queue, nothing runs; released, it runs them all.
func TestAHeldWorkerTakesNoJobUntilReleased(t *testing.T) {
	w := newMemWorld(t)
	inv := w.invoke(3)
	var held atomic.Bool
	var asked atomic.Int32
	held.Store(true)
	w.start(w.p.RunnerPorts(), func(wk *runner.Worker) {
		wk.Hold = func() error {
			asked.Add(1)
			if held.Load() {
				return errors.New("disk nearly full")
			}
			return nil
		}
	})
	testkit.Eventually(t, 10*time.Second, "the hold asked twice", func() bool { return asked.Load() >= 2 })
	if !w.waiting(inv) || w.p.Jobs.Out() != 0 || len(w.results(inv)) != 0 {
		t.Fatalf("while held: waiting %v, held %d, %d results", w.waiting(inv), w.p.Jobs.Out(), len(w.results(inv)))
	}
	held.Store(false)
	testkit.Eventually(t, 10*time.Second, "the invocation completed once released", func() bool {
		return w.get(inv).GetStatus() == domain.InvocationCompleted
	})
	if res := w.results(inv); len(res) != 3 {
		t.Fatalf("%d results once released; want 3", len(res))
	}
}
