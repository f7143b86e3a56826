package runner_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/outbound"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/testing/adapters"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
	"github.com/voiceai-platform/voiceai/services/testing/modelclient"
	"github.com/voiceai-platform/voiceai/services/testing/offline"
	"github.com/voiceai-platform/voiceai/services/testing/runner"
)

// A job that fails on every delivery is not left on the work queue for
// ever: after MaxAttempts deliveries its run is recorded failed under its
// test, with the reason, and the job leaves the queue.
func TestJobGivenUpAfterMaxAttempts(t *testing.T) {
	// A job whose test's definition cannot be read (no event at its
	// sequence) fails on every delivery.
	ctx, js, a, inv, log := invocationFixture(t, func(ws string, test *testingv1.PlannedTest) *testingv1.Invocation {
		unreadable := &testingv1.PlannedTest{TestId: test.TestId, TestName: test.TestName, TestType: test.TestType, TestStreamSeq: test.TestStreamSeq + 1000}
		return &testingv1.Invocation{InvocationId: "tinv_failing", WorkspaceId: ws, AgentId: "agent_1", RepeatCount: 1, JobsTotal: 1,
			Status: domain.InvocationRunning, Tests: []*testingv1.PlannedTest{unreadable}}
	})
	startWorker(ctx, t, js, a, log, func(w *runner.Worker) { w.MaxAttempts = 3 })
	ws := inv.WorkspaceId
	runID := domain.RunID(inv.InvocationId, 0)
	queueFirstRunJob(ctx, t, js, inv, 0)
	subject, _ := events.RunSubject(ws, inv.InvocationId, runID)
	results, err := js.OrderedConsumer(ctx, events.TestRunsStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := results.Next(jetstream.FetchMaxWait(20 * time.Second))
	if err != nil {
		t.Fatalf("no result recorded for a job failing on every delivery: %v", err)
	}
	run := eventOf(t, m).(*testingv1.RunCompleted).GetRun()
	if run.GetStatus() != domain.RunFailed || !strings.Contains(run.GetError(), "started 3 times") || run.GetTestId() != inv.GetTests()[0].GetTestId() {
		t.Fatalf("given-up run: status %q, error %q, test %q; want failed under %s", run.GetStatus(), run.GetError(), run.GetTestId(), inv.GetTests()[0].GetTestId())
	}
	// The job leaves the queue once its result is stored.
	waitQueueEmpty(ctx, t, js, 10*time.Second)
}

// eventOf is the event a stream message holds.
func eventOf(t *testing.T, m jetstream.Msg) proto.Message {
	t.Helper()
	rec, err := eventstore.RecordFromMsg(m)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := esproto.Decode(rec)
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// batchFixture is an invocation of one test repeated 5 times, with no
// job queued yet.
func batchFixture(t *testing.T) (context.Context, jetstream.JetStream, *app.App, *testingv1.Invocation, *slog.Logger) {
	t.Helper()
	return invocationFixture(t, func(ws string, test *testingv1.PlannedTest) *testingv1.Invocation {
		return &testingv1.Invocation{InvocationId: "tinv_batch", WorkspaceId: ws, AgentId: "agent_1", RepeatCount: 5, JobsTotal: 5,
			Status: domain.InvocationRunning, AgentConfigJson: []byte(`{"agent":{"prompt":{"prompt":"We are open nine to five."}}}`),
			Tests: []*testingv1.PlannedTest{test}}
	})
}

// invocationFixture stores the test "hours" in workspace ws_1 and the
// running invocation of it that invocation makes, with no job queued yet.
func invocationFixture(t *testing.T, invocation func(ws string, test *testingv1.PlannedTest) *testingv1.Invocation) (context.Context, jetstream.JetStream, *app.App, *testingv1.Invocation, *slog.Logger) {
	t.Helper()
	ctx, js := testingStreams(t)
	log := slog.New(slog.DiscardHandler)
	a, inv := storedInvocation(ctx, t, js, log, `{"type":"llm","name":"hours",
	  "chat_history":[{"role":"user","message":"When are you open?","time_in_call_secs":1}],"success_condition":"open nine to five"}`, invocation)
	return ctx, js, a, inv, log
}

// storedInvocation stores the test testJSON in workspace ws_1 and the
// running invocation of it that invocation makes, on js.
func storedInvocation(ctx context.Context, t *testing.T, js jetstream.JetStream, log *slog.Logger, testJSON string,
	invocation func(ws string, test *testingv1.PlannedTest) *testingv1.Invocation) (*app.App, *testingv1.Invocation) {
	t.Helper()
	a := app.New(adapters.JetStreamPorts(js, log, nil), nil, log, time.Now)
	const ws = "ws_1"
	test, err := a.CreateTest(ctx, principal.In(ws), []byte(testJSON))
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := eventstore.New(js, events.TestingStream).Last(ctx, must(events.TestingSubject(ws, events.TestingKindTest, test.GetTestId())))
	if err != nil {
		t.Fatal(err)
	}
	inv := invocation(ws, &testingv1.PlannedTest{TestId: test.GetTestId(), TestName: test.GetName(), TestType: test.GetType(), TestStreamSeq: rec.Seq})
	meta := esproto.Meta(ctx, ws, "", time.Now())
	if _, _, err := a.Invocations.Create(ctx, ws, inv.InvocationId, meta, &testingv1.InvocationCreated{Meta: meta, Invocation: inv}, inv); err != nil {
		t.Fatal(err)
	}
	return a, inv
}

// A job of a large invocation carries several runs: each gets its result,
// and a redelivered job skips the runs whose results an earlier delivery
// stored, so no run runs twice.
func TestMultiRunJobSkipsStoredRunsOnRedelivery(t *testing.T) {
	ctx, js, a, inv, log := batchFixture(t)
	// An earlier delivery stored run 2's result, then its worker died.
	stored, subject2 := earlierRun2(inv)
	m2 := &commonv1.EventMeta{EventId: "evt_earlier", WorkspaceId: inv.WorkspaceId}
	if _, err := esproto.Append(ctx, eventstore.New(js, events.TestRunsStream), subject2, eventstore.AnySeq, m2,
		&testingv1.RunCompleted{Meta: m2, Run: stored}); err != nil {
		t.Fatal(err)
	}
	queueFirstRunJob(ctx, t, js, inv, 5) // runs 0 to 4
	cons, err := js.Consumer(ctx, events.TestJobsStream, adapters.RunQueueName(inv.WorkspaceId, inv.InvocationId))
	if err != nil {
		t.Fatal(err)
	}
	first, err := cons.Fetch(1)
	if err != nil {
		t.Fatal(err)
	}
	for m := range first.Messages() {
		_ = m.Nak() // the earlier delivery, whose worker died
	}

	w, stop := startWorker(ctx, t, js, a, log, nil)
	// The job is acked once all its results are stored: wait for that.
	waitQueueEmpty(ctx, t, js, 10*time.Second)
	perRun := map[string][]*testingv1.RunResult{}
	if err := a.EachRunResult(ctx, inv, func(r *testingv1.RunResult) error {
		perRun[r.GetRunId()] = append(perRun[r.GetRunId()], r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n := resultsStored(ctx, js, inv); len(perRun) != 5 || n != 5 {
		t.Fatalf("%d runs with results, %d results stored; want 5 and 5 (each run once)", len(perRun), n)
	}
	if r := perRun[stored.RunId][0]; r.GetWorkerId() != "earlier" {
		t.Fatalf("run 2 ran again (worker %s)", r.GetWorkerId())
	}
	for id, rs := range perRun {
		if id != stored.RunId && (rs[0].GetStatus() != domain.RunPassed || rs[0].GetWorkerId() != w.ID) {
			t.Fatalf("run %s: %+v", id, rs[0])
		}
	}
	// The worker adds its progress as it stops: the run it skipped is not
	// counted.
	stop()
	if n, _, err := a.Counts(context.Background(), inv.InvocationId, 1); err != nil || n != 4 {
		t.Fatalf("%d runs counted (%v), want the 4 it ran", n, err)
	}
}

// A result the stream already held under the same message id (a run
// stored twice) is not counted twice: completion trusts counters that
// add up.
func TestDuplicateResultIsNotCounted(t *testing.T) {
	ctx, js, a, inv, log := batchFixture(t)
	// Run 2's result is already stored under the message id the worker
	// will publish it with.
	stored, subject2 := earlierRun2(inv)
	m2 := &commonv1.EventMeta{EventId: "evt_earlier", WorkspaceId: inv.WorkspaceId, CommandId: stored.RunId + "#1"}
	msg, _ := eventstore.NewEventMsg(ctx, subject2, m2, &testingv1.RunCompleted{Meta: m2, Run: stored})
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
	queueFirstRunJob(ctx, t, js, inv, 5) // runs 0 to 4
	_, stop := startWorker(ctx, t, js, a, log, nil)
	waitQueueEmpty(ctx, t, js, 10*time.Second)
	stop()
	storedCount := resultsStored(ctx, js, inv)
	if n, _, err := a.Counts(context.Background(), inv.InvocationId, 1); err != nil || n != 4 || storedCount != 5 {
		t.Fatalf("%d runs counted (%v), %d results stored; want 4 counted (the duplicate not) and 5 stored", n, err, storedCount)
	}
}

// earlierRun2 is run 2's result as an earlier delivery stored it, and its
// subject.
func earlierRun2(inv *testingv1.Invocation) (*testingv1.RunResult, string) {
	stored := &testingv1.RunResult{RunId: domain.RunID(inv.InvocationId, 2), InvocationId: inv.InvocationId, WorkspaceId: inv.WorkspaceId,
		Attempt: 1, Status: domain.RunPassed, WorkerId: "earlier"}
	subject, _ := events.RunSubject(inv.WorkspaceId, inv.InvocationId, stored.RunId)
	return stored, subject
}

// queueFirstRunJob makes the invocation's queue and publishes
// publishFirstRunJob's job on it, as the enqueuer does.
func queueFirstRunJob(ctx context.Context, t *testing.T, js jetstream.JetStream, inv *testingv1.Invocation, runCount int32) {
	t.Helper()
	if err := adapters.EnsureRunQueue(ctx, js, inv.WorkspaceId, inv.InvocationId); err != nil {
		t.Fatal(err)
	}
	publishFirstRunJob(ctx, t, js, inv, runCount)
}

// publishFirstRunJob publishes a first-attempt job of inv's run 0 that
// carries runCount runs from it (0: that run alone), whether or not the
// invocation has its queue.
func publishFirstRunJob(ctx context.Context, t *testing.T, js jetstream.JetStream, inv *testingv1.Invocation, runCount int32) {
	t.Helper()
	first := domain.RunID(inv.InvocationId, 0)
	job, _ := proto.Marshal(&testingv1.RunJob{WorkspaceId: inv.WorkspaceId, InvocationId: inv.InvocationId, Kind: "run",
		RunId: first, Attempt: 1, RunCount: runCount})
	if _, err := js.Publish(ctx, must(events.TestJobSubject(inv.WorkspaceId, inv.InvocationId, first)), job); err != nil {
		t.Fatal(err)
	}
}

// resultsStored counts the results TESTRUNS holds for inv.
func resultsStored(ctx context.Context, js jetstream.JetStream, inv *testingv1.Invocation) uint64 {
	results, _ := js.Stream(ctx, events.TestRunsStream)
	info, _ := results.Info(ctx, jetstream.WithSubjectFilter(must(events.RunsOfInvocation(inv.WorkspaceId, inv.InvocationId))))
	return info.State.Msgs
}

// startWorker runs an offline worker on a, tuned by tune. stop (also
// run when the test ends) stops it and checks that it stopped cleanly.
func startWorker(ctx context.Context, t *testing.T, js jetstream.JetStream, a *app.App, log *slog.Logger, tune func(*runner.Worker)) (w *runner.Worker, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	w = &runner.Worker{Ports: adapters.NewRunnerPorts(js, 0, log), App: a, Exec: &runner.Executor{Now: time.Now, Model: offline.Model{}}, Concurrency: 2, Log: log, RetryDelay: 10 * time.Millisecond}
	if tune != nil {
		tune(w)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("the worker stopped with %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return w, stop
}

// playAgentsLocally makes w play custom-llm agents through their
// endpoints on this machine, every other agent (and the judge) through the
// offline model.
func playAgentsLocally(w *runner.Worker) {
	agents := &modelclient.Endpoints{Platform: modelclient.PlatformAgents{Default: offline.Model{}}, Guard: outbound.NewGuard([]string{"127.0.0.1"})}
	w.Exec = &runner.Executor{Now: time.Now, Model: offline.Model{}, Agents: agents}
}

// waitQueueEmpty waits, up to within, until every job has left the work
// queue: each is acknowledged once all its results are stored.
func waitQueueEmpty(ctx context.Context, t *testing.T, js jetstream.JetStream, within time.Duration) {
	t.Helper()
	str, err := js.Stream(ctx, events.TestJobsStream)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, within, "every job acknowledged", func() bool {
		info, err := str.Info(ctx)
		return err == nil && info.State.Msgs == 0
	})
}

// must unwraps a subject the test knows to be valid.
func must(subject string, err error) string {
	if err != nil {
		panic(err)
	}
	return subject
}

// testingStreams are the testing service's streams on a NATS server of
// the test's own, and a context that ends with the test.
func testingStreams(t *testing.T) (context.Context, jetstream.JetStream) {
	t.Helper()
	js := testenv.StreamsAt(t, adapters.EnsureStreams)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx, js
}

// Jobs left on the work queue without a queue of their invocation (it
// was deleted, empty, as the invocation was resubmitted) get their queue
// back from a worker, and are run.
func TestJobsWithoutAQueueAreRun(t *testing.T) {
	ctx, js, a, inv, log := batchFixture(t)
	publishFirstRunJob(ctx, t, js, inv, 5)
	startWorker(ctx, t, js, a, log, nil)
	waitQueueEmpty(ctx, t, js, 30*time.Second)
	if n := resultsStored(ctx, js, inv); n != 5 {
		t.Fatalf("%d results stored, want the job's 5", n)
	}
}
