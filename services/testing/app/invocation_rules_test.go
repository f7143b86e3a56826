package app_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	events "github.com/voiceai-platform/voiceai/proto-events"
	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/cursor"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/testing/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// Rule tests of invocations (queuing, completion, bucketing, cancel,
// resubmit) on the memory adapters; the test plays the runners.

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type world struct {
	t     *testing.T
	a     *app.App
	p     *memory.Ports
	clock *clock
	c     principal.Caller
	test  string // a test's id
}

const agentID = "agent_1"

func newWorld(t *testing.T) *world {
	t.Helper()
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	p := memory.NewPorts(clk.Now)
	a := app.New(p.Ports(), memory.NewIndex(), slog.New(slog.DiscardHandler), clk.Now)
	a.Cursors = cursor.NewCodec([]byte("0123456789abcdef0123456789abcdef"))
	a.ConversationKeys = convseal.NewMemoryKeys()
	w := &world{t: t, a: a, p: p, clock: clk}
	return w.inWorkspace("ws")
}

// inWorkspace is w's app and ports seen from workspace ws, which gets an
// agent and a test of its own.
func (w *world) inWorkspace(ws string) *world {
	w.t.Helper()
	ctx := context.Background()
	o := *w
	o.c = principal.Caller{Principal: principal.Principal{WorkspaceID: ws, UserID: "u1", Email: "u1@example.com"}}
	subject, _ := events.AgentSubject(ws, agentID)
	meta := esproto.Meta(ctx, ws, "", w.clock.Now())
	if _, err := esproto.Append(ctx, w.p.Agents, subject, 0, meta, &agentsv1.AgentCreated{Meta: meta,
		Agent: &agentsv1.Agent{AgentId: agentID, WorkspaceId: ws, Name: "Front desk"}}); err != nil {
		w.t.Fatal(err)
	}
	test, err := w.a.CreateTest(ctx, o.c, []byte(`{"type":"llm","name":"Opening hours","success_condition":"states the hours"}`))
	if err != nil {
		w.t.Fatal(err)
	}
	o.test = test.GetTestId()
	return &o
}

// run invokes the test repeat times and has the enqueuer queue its runs.
func (w *world) run(repeat int) *testingv1.Invocation {
	w.t.Helper()
	inv, err := w.a.RunTests(context.Background(), w.c, agentID, app.RunTestsInput{Tests: []app.TestRef{{TestID: w.test}}, RepeatCount: &repeat})
	if err != nil {
		w.t.Fatal(err)
	}
	w.enqueueLast(inv.GetInvocationId())
	return inv
}

// lastEvent is the invocation's last event, as the feed delivers it.
func (w *world) lastEvent(id string) app.Record {
	w.t.Helper()
	subject, _ := events.TestingSubject(w.c.WorkspaceID, events.TestingKindInvocation, id)
	rec, found, err := w.p.Testing.Last(context.Background(), subject)
	if err != nil || !found {
		w.t.Fatalf("invocation event: found %v, %v", found, err)
	}
	return rec
}

// enqueueLast hands the invocation's last event to the enqueuer.
func (w *world) enqueueLast(id string) {
	w.t.Helper()
	if err := app.Enqueue(w.a, context.Background(), w.lastEvent(id), func() {}); err != nil {
		w.t.Fatal(err)
	}
}

// work does the invocation's waiting jobs as runners do: each run's result
// stored, then counted, then the job gone from the queue.
func (w *world) work(id string, status func(run int) string) []*testingv1.RunJob {
	w.t.Helper()
	return w.workWith(id, status, nil)
}

// workWith is work with each run's result edited (nil: as it is) before it
// is stored.
func (w *world) workWith(id string, status func(run int) string, edit func(run int, r *testingv1.RunResult)) []*testingv1.RunJob {
	w.t.Helper()
	filter, _ := events.TestJobsOfInvocation(w.c.WorkspaceID, id)
	return w.workJobs(filter, id, status, edit)
}

// workRun is work for the job of one run alone.
func (w *world) workRun(id string, run int, status func(run int) string) {
	w.t.Helper()
	filter, _ := events.TestJobSubject(w.c.WorkspaceID, id, domain.RunID(id, run))
	w.workJobs(filter, id, status, nil)
}

// workJobs is work for the waiting jobs filter matches.
func (w *world) workJobs(filter, id string, status func(run int) string, edit func(run int, r *testingv1.RunResult)) []*testingv1.RunJob {
	w.t.Helper()
	var jobs []*testingv1.RunJob
	for _, m := range w.p.Jobs.Take(filter) {
		job := &testingv1.RunJob{}
		if err := protoUnmarshal(m.Data, job); err != nil {
			w.t.Fatal(err)
		}
		jobs = append(jobs, job)
		if job.GetKind() != "run" {
			continue
		}
		first, _ := domain.RunIndex(id, job.GetRunId())
		for i := first; i < first+int(max(job.GetRunCount(), 1)); i++ {
			s := status(i)
			storeResult(w.t, w.p.Runs, w.c.WorkspaceID, id, i, job.GetAttempt(), s, true, func(r *testingv1.RunResult) {
				if edit != nil {
					edit(i, r)
				}
			})
			done, _ := events.TestCountSubject(id, job.GetAttempt(), "done")
			w.p.Counts.Add(done, 1)
			if s == domain.RunPassed {
				passed, _ := events.TestCountSubject(id, job.GetAttempt(), "passed")
				w.p.Counts.Add(passed, 1)
			}
		}
	}
	return jobs
}

func (w *world) get(id string) *testingv1.Invocation {
	w.t.Helper()
	inv, _, err := w.a.Invocations.Get(context.Background(), w.c.WorkspaceID, id)
	if err != nil {
		w.t.Fatal(err)
	}
	return inv
}

func (w *world) complete(id string) bool {
	w.t.Helper()
	done, err := w.a.CheckCompletion(context.Background(), w.c.WorkspaceID, id)
	if err != nil {
		w.t.Fatal(err)
	}
	return done
}

func passEven(i int) string {
	if i%2 == 0 {
		return domain.RunPassed
	}
	return domain.RunFailed
}

func TestAnInvocationCompletesOnceEveryJobIsDone(t *testing.T) {
	w := newWorld(t)
	inv := w.run(1)
	if w.complete(inv.GetInvocationId()) {
		t.Fatal("completed with its job waiting")
	}
	w.work(inv.GetInvocationId(), passEven)
	if !w.complete(inv.GetInvocationId()) {
		t.Fatal("not completed with every job done")
	}
	got := w.get(inv.GetInvocationId())
	if got.GetStatus() != domain.InvocationCompleted || got.GetPassedCount() != 1 || got.GetFailedCount() != 0 || got.CompletedAtUnix == nil {
		t.Fatalf("completed as %s, passed %d, failed %d", got.GetStatus(), got.GetPassedCount(), got.GetFailedCount())
	}
	if w.complete(inv.GetInvocationId()) {
		t.Fatal("completed twice")
	}
	bucketing, _ := events.TestBucketingJobSubject("ws", inv.GetInvocationId(), "1")
	if waiting, _ := w.p.Jobs.Waiting(context.Background(), bucketing); waiting {
		t.Fatal("a single run queued bucketing")
	}
}

// An invocation whose jobs are not all queued yet is not complete, even
// with nothing on the queue.
func TestAnInvocationBeingQueuedIsNotComplete(t *testing.T) {
	w := newWorld(t)
	repeat := 2
	inv, err := w.a.RunTests(context.Background(), w.c, agentID, app.RunTestsInput{Tests: []app.TestRef{{TestID: w.test}}, RepeatCount: &repeat})
	if err != nil {
		t.Fatal(err)
	}
	if w.complete(inv.GetInvocationId()) {
		t.Fatal("completed before its runs were queued")
	}
}

func TestRepeatedRunsAreBucketedOnceComplete(t *testing.T) {
	w := newWorld(t)
	inv := w.run(3)
	if inv.GetBucketingStatus() != domain.BucketingPending {
		t.Fatalf("bucketing %q; want pending", inv.GetBucketingStatus())
	}
	w.work(inv.GetInvocationId(), passEven)
	if !w.complete(inv.GetInvocationId()) {
		t.Fatal("not completed")
	}
	if got := w.get(inv.GetInvocationId()); got.GetPassedCount() != 2 || got.GetFailedCount() != 1 {
		t.Fatalf("passed %d, failed %d; want 2 and 1", got.GetPassedCount(), got.GetFailedCount())
	}
	// Bucketing is queued apart from the runs (a cancel purges runs only).
	bucketing, _ := events.TestBucketingJobSubject("ws", inv.GetInvocationId(), "3")
	jobs := w.p.Jobs.Take(bucketing)
	if len(jobs) != 1 {
		t.Fatalf("after completion %d bucketing jobs; want 1", len(jobs))
	}
	job := &testingv1.RunJob{}
	if err := protoUnmarshal(jobs[0].Data, job); err != nil || job.GetKind() != "bucketing" || job.GetInvocationId() != inv.GetInvocationId() {
		t.Fatalf("bucketing job %v, %v", job, err)
	}
}

// The sweeper leaves a round a runner claimed to that runner for a
// while, then completes it itself (the runner died).
func TestTheSweeperWaitsForARunnersClaim(t *testing.T) {
	w := newWorld(t)
	inv := w.run(1)
	w.work(inv.GetInvocationId(), passEven)
	claim, _ := events.TestRunsCompletingSubject("ws", inv.GetInvocationId())
	if _, err := w.p.Runs.Publish(context.Background(), app.Message{Subject: claim, ID: "claim", Data: []byte("1")}); err != nil {
		t.Fatal(err)
	}
	if w.complete(inv.GetInvocationId()) {
		t.Fatal("the sweeper completed a round a runner just claimed")
	}
	w.clock.Add(31 * time.Second)
	if !w.complete(inv.GetInvocationId()) {
		t.Fatal("the sweeper did not complete a round claimed long ago")
	}
}

// Of runners claiming the same round, only the first completes it.
func TestOnlyTheFirstClaimCompletes(t *testing.T) {
	w := newWorld(t)
	inv := w.run(2)
	w.work(inv.GetInvocationId(), passEven)
	claim, _ := events.TestRunsCompletingSubject("ws", inv.GetInvocationId())
	round := "2"
	if _, err := w.p.Runs.Publish(context.Background(), app.Message{Subject: claim, ID: inv.GetInvocationId() + "#completing#" + round, Data: []byte(round)}); err != nil {
		t.Fatal(err)
	}
	if done, err := w.a.ClaimCompletion(context.Background(), "ws", inv.GetInvocationId(), true); err != nil || done {
		t.Fatalf("a second claim of the round completed: %v, %v", done, err)
	}
	if got := w.get(inv.GetInvocationId()); got.GetStatus() != domain.InvocationRunning {
		t.Fatalf("status %s; want running, left to the first claimant", got.GetStatus())
	}
}

func TestCancelDropsTheWaitingJobs(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	inv := w.run(3)
	got, err := w.a.Cancel(ctx, w.c, inv.GetInvocationId())
	if err != nil {
		t.Fatal(err)
	}
	if got.GetStatus() != domain.InvocationCancelled || got.GetBucketingStatus() != domain.BucketingFailed || got.CancelledAtUnix == nil {
		t.Fatalf("cancelled as %s, bucketing %s", got.GetStatus(), got.GetBucketingStatus())
	}
	jobs, _ := events.TestJobsOfInvocation("ws", inv.GetInvocationId())
	if waiting, _ := w.p.Jobs.Waiting(ctx, jobs); waiting {
		t.Fatal("jobs still waiting after cancel")
	}
	if again, err := w.a.Cancel(ctx, w.c, inv.GetInvocationId()); err != nil || again.GetStatus() != domain.InvocationCancelled {
		t.Fatalf("a second cancel: %v, %v", again.GetStatus(), err)
	}
	if w.complete(inv.GetInvocationId()) {
		t.Fatal("a cancelled invocation completed")
	}
}

func TestAFinishedInvocationCannotBeCancelled(t *testing.T) {
	w := newWorld(t)
	inv := w.run(1)
	w.work(inv.GetInvocationId(), passEven)
	w.complete(inv.GetInvocationId())
	if _, err := w.a.Cancel(context.Background(), w.c, inv.GetInvocationId()); !errors.Is(err, apperr.InvocationFinished) {
		t.Fatalf("cancel of a completed invocation: %v; want invocation_finished", err)
	}
}

func TestResubmitRunsAgainAsANewAttempt(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	inv := w.run(2)
	id := inv.GetInvocationId()
	run1 := domain.RunID(id, 1)
	in := app.ResubmitInput{TestRunIDs: []string{run1}, AgentID: agentID}
	if _, err := w.a.Resubmit(ctx, w.c, id, in); !errors.Is(err, apperr.InvocationRunning) {
		t.Fatalf("resubmit while running: %v; want invocation_running", err)
	}
	w.work(id, passEven)
	w.complete(id)
	for what, bad := range map[string]app.ResubmitInput{
		"another agent":  {TestRunIDs: []string{run1}, AgentID: "agent_other"},
		"an unknown run": {TestRunIDs: []string{domain.RunID(id, 7)}, AgentID: agentID},
		"a duplicate":    {TestRunIDs: []string{run1, run1}, AgentID: agentID},
		"another branch": {TestRunIDs: []string{run1}, AgentID: agentID, BranchID: new("dev")},
	} {
		if _, err := w.a.Resubmit(ctx, w.c, id, bad); apperr.KindOf(err) != apperr.Invalid {
			t.Fatalf("resubmit of %s: %v, want a 422", what, err)
		}
	}
	got, err := w.a.Resubmit(ctx, w.c, id, in)
	if err != nil {
		t.Fatal(err)
	}
	if got.GetStatus() != domain.InvocationRunning || got.GetJobsTotal() != 3 || len(got.GetResubmissions()) != 1 ||
		got.GetResubmissions()[0].GetAttempt() != 2 || got.GetBucketingStatus() != domain.BucketingPending {
		t.Fatalf("resubmitted as %s, jobs %d, resubmissions %v, bucketing %s", got.GetStatus(), got.GetJobsTotal(), got.GetResubmissions(), got.GetBucketingStatus())
	}
	w.enqueueLast(id)
	w.enqueueLast(id) // the enqueuer's retry queues nothing twice
	jobs := w.work(id, func(int) string { return domain.RunPassed })
	if len(jobs) != 1 || jobs[0].GetRunId() != run1 || jobs[0].GetAttempt() != 2 {
		t.Fatalf("queued %v; want run 1's attempt 2 once", jobs)
	}
	if !w.complete(id) {
		t.Fatal("the resubmission did not complete")
	}
	if got := w.get(id); got.GetPassedCount() != 2 || got.GetFailedCount() != 0 {
		t.Fatalf("after the resubmission passed %d, failed %d; want 2 and 0", got.GetPassedCount(), got.GetFailedCount())
	}
}

// deleteAgent deletes w's agent as the agents service does.
func (w *world) deleteAgent() {
	w.t.Helper()
	ctx := context.Background()
	subject, _ := events.AgentSubject(w.c.WorkspaceID, agentID)
	last, found, err := w.p.Agents.Last(ctx, subject)
	if err != nil || !found {
		w.t.Fatalf("the agent's last event: found %v, %v", found, err)
	}
	now := w.clock.Now().Unix()
	meta := esproto.Meta(ctx, w.c.WorkspaceID, "", w.clock.Now())
	if _, err := esproto.Append(ctx, w.p.Agents, subject, last.Seq, meta, &agentsv1.AgentDeleted{Meta: meta,
		Agent: &agentsv1.Agent{AgentId: agentID, WorkspaceId: w.c.WorkspaceID, Name: "Front desk", DeletedAtUnix: &now}}); err != nil {
		w.t.Fatal(err)
	}
}

// A deleted agent's invocation is not resubmitted: agent_not_found, as
// run-tests answers, and nothing is queued; a replay of a resubmission
// made before the deletion still answers it.
func TestResubmitRefusesADeletedAgent(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	a, b := w.run(1).GetInvocationId(), w.run(1).GetInvocationId()
	for _, id := range []string{a, b} {
		w.work(id, passEven)
		w.complete(id)
	}
	keyed := w.as("cmd_resubmit")
	first, err := w.a.Resubmit(ctx, keyed, b, app.ResubmitInput{TestRunIDs: []string{domain.RunID(b, 0)}, AgentID: agentID})
	if err != nil {
		t.Fatal(err)
	}
	w.deleteAgent()
	if _, err := w.a.RunTests(ctx, w.c, agentID, app.RunTestsInput{Tests: []app.TestRef{{TestID: w.test}}}); !errors.Is(err, apperr.AgentNotFound) {
		t.Fatalf("run-tests on a deleted agent: %v; want agent_not_found", err)
	}
	_, err = w.a.Resubmit(ctx, w.c, a, app.ResubmitInput{TestRunIDs: []string{domain.RunID(a, 0)}, AgentID: agentID})
	if !errors.Is(err, apperr.AgentNotFound) {
		t.Fatalf("resubmit on a deleted agent: %v; want agent_not_found", err)
	}
	if got := w.get(a); got.GetStatus() != domain.InvocationCompleted || len(got.GetResubmissions()) != 0 {
		t.Fatalf("after a refused resubmit: %s with %d resubmissions", got.GetStatus(), len(got.GetResubmissions()))
	}
	again, err := w.a.Resubmit(ctx, keyed, b, app.ResubmitInput{TestRunIDs: []string{domain.RunID(b, 0)}, AgentID: agentID})
	if err != nil || len(again.GetResubmissions()) != len(first.GetResubmissions()) {
		t.Fatalf("a replay of a resubmission made before the deletion: %v, %v", again.GetResubmissions(), err)
	}
}
