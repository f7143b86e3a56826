package runner_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/testing/adapters"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
	"github.com/voiceai-platform/voiceai/services/testing/runner"
)

// loadSamples reads every load sample stored for the invocation.
func loadSamples(t *testing.T, js jetstream.JetStream, ws, inv string) []*testingv1.LoadSamples {
	t.Helper()
	ctx := t.Context()
	c, err := js.OrderedConsumer(ctx, events.TestRunsStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"testruns.load." + ws + "." + inv + ".>"}})
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []*testingv1.LoadSamples
	for n := info.NumPending; n > 0; n-- {
		m, err := c.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, eventOf(t, m).(*testingv1.LoadSamplesRecorded).GetSamples())
	}
	return out
}

func queueLoadJob(t *testing.T, js jetstream.JetStream, ws, inv string, step, job, callers int) {
	t.Helper()
	if err := adapters.EnsureRunQueue(t.Context(), js, ws, inv); err != nil {
		t.Fatal(err)
	}
	data, _ := proto.Marshal(&testingv1.RunJob{WorkspaceId: ws, InvocationId: inv, Kind: domain.JobLoad, Attempt: 1,
		LoadStep: int32(step), LoadJob: int32(job), LoadCallers: int32(callers)})
	if _, err := js.Publish(t.Context(), must(events.LoadJobSubject(ws, inv, step, job)), data); err != nil {
		t.Fatal(err)
	}
}

// loadFixture is a running load test of one step of callers (turns each)
// whose agent is config, with no job queued yet.
func loadFixture(t *testing.T, callers, turns int, config string) (context.Context, jetstream.JetStream, *app.App, *testingv1.Invocation, *slog.Logger) {
	t.Helper()
	return invocationFixture(t, func(ws string, test *testingv1.PlannedTest) *testingv1.Invocation {
		return &testingv1.Invocation{InvocationId: "tinv_load", WorkspaceId: ws, AgentId: "agent_1", RepeatCount: 1,
			Status: domain.InvocationRunning, AgentConfigJson: []byte(config),
			Load: &testingv1.LoadTest{Steps: []int32{int32(callers)}, TurnsPerCaller: int32(turns), Test: test}}
	})
}

// A load step's jobs are played by a worker, their samples stored, and
// the step finished by the worker that stored the last: the load test
// completes. A job whose samples an earlier delivery stored is not
// played again.
func TestALoadStepIsPlayedOnceAndFinished(t *testing.T) {
	ctx, js, a, inv, log := loadFixture(t, 4, 2, `{"agent":{"prompt":{"prompt":"We are open nine to five."}}}`)
	ws := inv.WorkspaceId
	// Job 1 of the step was played before, its samples stored, and its
	// worker died before the ack.
	earlier, err := a.LoadSamplesMessage(ctx, &testingv1.LoadSamples{WorkspaceId: ws, InvocationId: inv.InvocationId, Step: 0, Job: 1, Callers: 2,
		FirstTokenUs: []int64{1000, 1000, 1000, 1000}, TurnUs: []int64{2000, 2000, 2000, 2000}, OverheadUs: []int64{10, 10, 10, 10}, WorkerId: "earlier"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Runs.Publish(ctx, earlier); err != nil {
		t.Fatal(err)
	}
	sizes := domain.LoadJobs(4)
	for i, n := range sizes {
		queueLoadJob(t, js, ws, inv.InvocationId, 0, i, n)
	}
	w, _ := startWorker(ctx, t, js, a, log, nil)
	waitQueueEmpty(ctx, t, js, 10*time.Second)
	testkit.Eventually(t, 10*time.Second, "the load test completes", func() bool {
		got, _, err := a.Invocations.Get(ctx, ws, inv.InvocationId)
		return err == nil && got.GetStatus() == domain.InvocationCompleted
	})
	samples := loadSamples(t, js, ws, inv.InvocationId)
	if len(samples) != 2 {
		t.Fatalf("%d samples stored, want one per job", len(samples))
	}
	for _, s := range samples {
		want := w.ID
		if s.GetJob() == 1 {
			want = "earlier"
		}
		if s.GetWorkerId() != want || len(s.GetTurnUs()) != 4 {
			t.Fatalf("job %d: worker %s, %d turns", s.GetJob(), s.GetWorkerId(), len(s.GetTurnUs()))
		}
	}
	got, _, _ := a.Invocations.Get(ctx, ws, inv.InvocationId)
	r := got.GetLoad().GetResults()
	if len(r) != 1 || r[0].GetTurns() != 8 || r[0].GetFailedTurns() != 0 || r[0].GetJobsReported() != 2 || !r[0].GetMetBudget() {
		t.Fatalf("step result %v", r)
	}
}

// A load job that fails on every delivery (here: the test version its
// invocation pinned cannot be read) is given up: its callers' turns, each
// caller's turns per caller, are stored as failed, with the reason, and
// the job leaves the queue. (One of no invocation is dropped:
// TestALoadJobGivenUpOfNoInvocationIsDropped.)
func TestALoadJobIsGivenUp(t *testing.T) {
	ctx, js, a, inv, log := invocationFixture(t, func(ws string, test *testingv1.PlannedTest) *testingv1.Invocation {
		unreadable := proto.Clone(test).(*testingv1.PlannedTest)
		unreadable.TestStreamSeq = 1 << 40 // no such version
		return &testingv1.Invocation{InvocationId: "tinv_load", WorkspaceId: ws, AgentId: "agent_1", RepeatCount: 1,
			Status: domain.InvocationRunning, Load: &testingv1.LoadTest{Steps: []int32{7}, TurnsPerCaller: 2, Test: unreadable}}
	})
	startWorker(ctx, t, js, a, log, func(w *runner.Worker) { w.MaxAttempts = 3 })
	queueLoadJob(t, js, inv.WorkspaceId, inv.InvocationId, 0, 0, 7)
	waitQueueEmpty(ctx, t, js, 10*time.Second)
	samples := loadSamples(t, js, inv.WorkspaceId, inv.InvocationId)
	if len(samples) != 1 || len(samples[0].GetFailures()) != 1 || samples[0].GetFailures()[0].GetCount() != 14 ||
		!strings.Contains(samples[0].GetFailures()[0].GetReason(), "started 3 times") {
		t.Fatalf("given-up load job: %v", samples)
	}
}

// A step's jobs are spread across runners, and its callers need no
// runner slot each: two workers of one slot each play a step of 20
// callers (two jobs of 10) with all 20 in flight at the endpoint together.
func TestALoadStepIsSpreadAcrossWorkers(t *testing.T) {
	var now, most atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := now.Add(1)
		defer now.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		if n == 20 {
			close(release) // every caller is in: answer them all
		}
		select {
		case <-release:
		case <-time.After(5 * time.Second): // fewer than 20 ever came: answer anyway, the test fails on most
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Nine to five."},"finish_reason":"stop"}]}`))
	}))
	t.Cleanup(srv.Close)
	ctx, js, a, inv, log := loadFixture(t, 20, 1, `{"agent":{"prompt":{"prompt":"p","llm":"custom-llm","custom_llm":{"url":"`+srv.URL+`","model_id":"team"}}}}`)
	one := func(w *runner.Worker) {
		w.Concurrency, w.Headroom = 1, 1
		playAgentsLocally(w)
	}
	w1, _ := startWorker(ctx, t, js, a, log, one)
	w2, _ := startWorker(ctx, t, js, a, log, one)
	for i, n := range domain.LoadJobs(20) {
		queueLoadJob(t, js, inv.WorkspaceId, inv.InvocationId, 0, i, n)
	}
	testkit.Eventually(t, 20*time.Second, "the load test completes", func() bool {
		got, _, err := a.Invocations.Get(ctx, inv.WorkspaceId, inv.InvocationId)
		return err == nil && got.GetStatus() == domain.InvocationCompleted
	})
	workers := map[string]int{}
	for _, s := range loadSamples(t, js, inv.WorkspaceId, inv.InvocationId) {
		workers[s.GetWorkerId()] += len(s.GetTurnUs())
	}
	if most.Load() != 20 || workers[w1.ID] != 10 || workers[w2.ID] != 10 {
		t.Fatalf("at most %d in flight (want 20); turns per worker %v", most.Load(), workers)
	}
}
