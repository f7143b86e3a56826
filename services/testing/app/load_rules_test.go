package app_test

import (
	"context"
	"errors"
	"testing"

	events "github.com/voiceai-platform/voiceai/proto-events"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// workLoad does the load test's waiting jobs as runners do: each job's
// callers answered with firstMs / turnMs (per caller count of the step),
// the samples stored, the job gone from the queue.
func (w *world) workLoad(id string, firstMs func(callers int) int64, fail map[string]int64) []*testingv1.RunJob {
	w.t.Helper()
	filter, _ := events.TestJobsOfInvocation("ws", id)
	var jobs []*testingv1.RunJob
	inv := w.get(id)
	for _, m := range w.p.Jobs.Take(filter) {
		job := &testingv1.RunJob{}
		if err := protoUnmarshal(m.Data, job); err != nil {
			w.t.Fatal(err)
		}
		jobs = append(jobs, job)
		if job.GetKind() != domain.JobLoad {
			w.t.Fatalf("a load test queued a %q job", job.GetKind())
		}
		step := int(inv.GetLoad().GetSteps()[job.GetLoadStep()])
		s := &testingv1.LoadSamples{WorkspaceId: "ws", InvocationId: id, Step: job.GetLoadStep(), Job: job.GetLoadJob(), Callers: job.GetLoadCallers()}
		for range job.GetLoadCallers() {
			s.FirstTokenUs = append(s.FirstTokenUs, firstMs(step)*1000)
			s.TurnUs = append(s.TurnUs, firstMs(step)*1000+100_000)
			s.OverheadUs = append(s.OverheadUs, 250)
		}
		for r, n := range fail {
			s.Failures = append(s.Failures, &testingv1.LoadFailure{Reason: r, Count: n})
		}
		msg, err := w.a.LoadSamplesMessage(context.Background(), s)
		if err != nil {
			w.t.Fatal(err)
		}
		for range 2 { // a redelivered job stores its samples again: dropped
			if _, err := w.p.Runs.Publish(context.Background(), msg); err != nil {
				w.t.Fatal(err)
			}
		}
	}
	return jobs
}

func TestALoadTestRunsItsStepsInTurnAndNamesTheStepThatBrokeTheBudget(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	upd := `{"type":"llm","name":"Opening hours","success_condition":"states the hours","latency_budget":{"first_token_p95_ms":200}}`
	if _, err := w.a.UpdateTest(ctx, w.c, w.test, []byte(upd)); err != nil {
		t.Fatal(err)
	}
	inv, err := w.a.StartLoadTest(ctx, w.c, agentID, app.LoadTestInput{TestID: w.test, Steps: []int{1, 10, 50}})
	if err != nil {
		t.Fatal(err)
	}
	id := inv.GetInvocationId()
	if l := inv.GetLoad(); l.GetFirstTokenP95BudgetMs() != 200 || l.GetTurnsPerCaller() != 1 || inv.GetStatus() != domain.InvocationRunning {
		t.Fatalf("created %v", inv)
	}
	firstMs := func(callers int) int64 { return 50 + 10*int64(callers) }
	want := []struct {
		jobs  int
		first int64
		met   bool
	}{{1, 60, true}, {2, 150, true}, {2, 550, false}}
	w.enqueueLast(id)
	for step, wt := range want {
		if done, err := w.a.CheckLoadStep(ctx, "ws", id); err != nil || done {
			t.Fatalf("step %d finished before its jobs reported: %v %v", step, done, err)
		}
		jobs := w.workLoad(id, firstMs, nil)
		if len(jobs) != wt.jobs {
			t.Fatalf("step %d: %d jobs, want %d", step, len(jobs), wt.jobs)
		}
		for _, j := range jobs {
			if int(j.GetLoadStep()) != step {
				t.Fatalf("step %d queued a job of step %d", step, j.GetLoadStep())
			}
		}
		// Through the completion check, as the sweeper and runners call it.
		if done := w.complete(id); !done {
			t.Fatalf("step %d not finished with every job reported", step)
		}
		if done := w.complete(id); done {
			t.Fatalf("step %d finished twice", step)
		}
		got := w.get(id).GetLoad().GetResults()
		if len(got) != step+1 {
			t.Fatalf("after step %d: %d results", step, len(got))
		}
		r := got[step]
		if r.GetFirstTokenP95Ms() != wt.first || r.GetTurnP95Ms() != wt.first+100 || r.GetMetBudget() != wt.met ||
			r.GetTurns() != int64(r.GetCallers()) || r.GetOverheadP95Us() != 250 {
			t.Fatalf("step %d: %v", step, r)
		}
		if step == 0 { // listed while it runs: the steps done count at once
			listed, _, _, err := w.a.ListInvocations(ctx, app.InvocationFilter{WorkspaceID: "ws", Limit: 10})
			if err != nil || len(listed) != 1 || listed[0].Runs != 3 || listed[0].Passed != 1 || listed[0].Pending != 2 {
				t.Fatalf("listed after the first step: %+v %v", listed, err)
			}
		}
		w.enqueueLast(id) // the next step's jobs (none after the last)
	}
	got := w.get(id)
	if got.GetStatus() != domain.InvocationCompleted || got.GetPassedCount() != 2 || got.GetFailedCount() != 1 {
		t.Fatalf("ended %s, %d met, %d broke", got.GetStatus(), got.GetPassedCount(), got.GetFailedCount())
	}
	filter, _ := events.TestJobsOfInvocation("ws", id)
	if waiting, _ := w.p.Jobs.Waiting(ctx, filter); waiting {
		t.Fatal("jobs queued after the last step")
	}
	if _, err := w.a.LoadTest(ctx, "ws", id); err != nil {
		t.Fatal(err)
	}
	// Listed, its counts are its steps, as its completion says; its
	// reliability is of runs, and it has none.
	listed, _, _, err := w.a.ListInvocations(ctx, app.InvocationFilter{WorkspaceID: "ws", Limit: 10})
	if err != nil || len(listed) != 1 {
		t.Fatalf("listed %v %v", listed, err)
	}
	if l := listed[0]; l.Runs != 3 || l.Passed != 2 || l.Failed != 1 || l.Pending != 0 || l.Cancelled != 0 || l.Reliability.Runs != 0 || l.Reliability.Passed != 0 {
		t.Fatalf("the load test listed as %d steps, %d met, %d broke, %d pending, %d cancelled, reliability %+v", l.Runs, l.Passed, l.Failed, l.Pending, l.Cancelled, l.Reliability)
	}
	plain := w.run(1)
	if _, err := w.a.LoadTest(ctx, "ws", plain.GetInvocationId()); err != apperr.LoadTestNotFound {
		t.Fatalf("an invocation read as a load test: %v", err)
	}
}

func TestALoadStepWithFailedTurnsCountsThemByReason(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	inv, err := w.a.StartLoadTest(ctx, w.c, agentID, app.LoadTestInput{TestID: w.test, Steps: []int{4}})
	if err != nil {
		t.Fatal(err)
	}
	w.enqueueLast(inv.GetInvocationId())
	w.workLoad(inv.GetInvocationId(), func(int) int64 { return 10 }, map[string]int64{"agent endpoint unreachable: 503": 1})
	if !w.complete(inv.GetInvocationId()) {
		t.Fatal("not finished")
	}
	r := w.get(inv.GetInvocationId()).GetLoad().GetResults()[0]
	if r.GetFailedTurns() != 2 || r.GetTurns() != 6 || r.GetMetBudget() || len(r.GetFailures()) != 1 || r.GetFailures()[0].GetCount() != 2 {
		t.Fatalf("step %v", r)
	}
}

func TestALoadTestIsRefusedOverTheOperatorsMaximumAndCountsAsAnActiveInvocation(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.a.Limits.MaxLoadCallers = 20
	_, err := w.a.StartLoadTest(ctx, w.c, agentID, app.LoadTestInput{TestID: w.test, Steps: []int{1, 21, 0}})
	var v apperr.ValidationErrors
	if !errors.As(err, &v) || len(v) != 2 {
		t.Fatalf("steps over the maximum: %v", err)
	}
	if _, err := w.a.StartLoadTest(ctx, w.c, agentID, app.LoadTestInput{TestID: "test_missing", Steps: []int{1}}); !errors.As(err, &v) {
		t.Fatalf("unknown test: %v", err)
	}
	w.a.Limits.MaxActiveInvocations = 1
	if _, err := w.a.StartLoadTest(ctx, w.c, agentID, app.LoadTestInput{TestID: w.test, Steps: []int{1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.a.StartLoadTest(ctx, w.c, agentID, app.LoadTestInput{TestID: w.test, Steps: []int{1}}); !apperr.Is(err, apperr.RateLimited) {
		t.Fatalf("a second active load test over the quota: %v", err)
	}
}

// A cancelled load test's queued jobs are purged, no step of it finishes
// or is queued after the cancel, and it is not resubmitted.
func TestACancelledLoadTestStopsAfterItsRunningStep(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	inv, err := w.a.StartLoadTest(ctx, w.c, agentID, app.LoadTestInput{TestID: w.test, Steps: []int{2, 4}})
	if err != nil {
		t.Fatal(err)
	}
	id := inv.GetInvocationId()
	w.enqueueLast(id)
	if _, err := w.a.Cancel(ctx, w.c, id); err != nil {
		t.Fatal(err)
	}
	filter, _ := events.TestJobsOfInvocation("ws", id)
	if waiting, _ := w.p.Jobs.Waiting(ctx, filter); waiting {
		t.Fatal("a cancelled load test's jobs were left queued")
	}
	if done, err := w.a.CheckLoadStep(ctx, "ws", id); err != nil || done {
		t.Fatalf("a cancelled load test's step finished: %v %v", done, err)
	}
	got := w.get(id)
	if got.GetStatus() != domain.InvocationCancelled || len(got.GetLoad().GetResults()) != 0 {
		t.Fatalf("cancelled load test: %s, %d results", got.GetStatus(), len(got.GetLoad().GetResults()))
	}
	w.enqueueLast(id) // the cancel event queues nothing
	if waiting, _ := w.p.Jobs.Waiting(ctx, filter); waiting {
		t.Fatal("jobs queued after the cancel")
	}
	if _, err := w.a.Resubmit(ctx, w.c, id, app.ResubmitInput{TestRunIDs: []string{domain.RunID(id, 0)}, AgentID: agentID}); !errors.As(err, new(apperr.ValidationErrors)) {
		t.Fatalf("a load test resubmitted: %v", err)
	}
}

// The step a cancel stops finishes the calls its runners hold, and
// reports them: its figures are over the callers whose jobs stored
// samples, made again as each more job stores its own, and the load test
// stays cancelled with no further step.
func TestACancelledLoadTestsRunningStepReportsTheCallsItMade(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	inv, err := w.a.StartLoadTest(ctx, w.c, agentID, app.LoadTestInput{TestID: w.test, Steps: []int{4, 8}})
	if err != nil {
		t.Fatal(err)
	}
	id := inv.GetInvocationId()
	w.enqueueLast(id)
	filter, _ := events.TestJobsOfInvocation("ws", id)
	held := w.p.Jobs.Take(filter) // runners hold the step's jobs
	if len(held) != 2 {
		t.Fatalf("%d jobs for 4 callers; want 2", len(held))
	}
	if _, err := w.a.Cancel(ctx, w.c, id); err != nil {
		t.Fatal(err)
	}
	for i, m := range held { // each finishes its calls after the cancel
		job := &testingv1.RunJob{}
		if err := protoUnmarshal(m.Data, job); err != nil {
			t.Fatal(err)
		}
		s := &testingv1.LoadSamples{WorkspaceId: "ws", InvocationId: id, Step: job.GetLoadStep(), Job: job.GetLoadJob(), Callers: job.GetLoadCallers()}
		for range job.GetLoadCallers() {
			s.FirstTokenUs, s.TurnUs, s.OverheadUs = append(s.FirstTokenUs, 100_000), append(s.TurnUs, 200_000), append(s.OverheadUs, 250)
		}
		msg, err := w.a.LoadSamplesMessage(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.p.Runs.Publish(ctx, msg); err != nil {
			t.Fatal(err)
		}
		for range 2 { // checked by two runners: recorded once
			if done, err := w.a.CheckLoadStep(ctx, "ws", id); err != nil || done {
				t.Fatalf("a cancelled load test's step finished: %v %v", done, err)
			}
		}
		got := w.get(id)
		l := got.GetLoad()
		if got.GetStatus() != domain.InvocationCancelled || l.GetCurrentStep() != 0 || len(l.GetResults()) != 1 {
			t.Fatalf("after job %d: %s, step %d, %d results", i, got.GetStatus(), l.GetCurrentStep(), len(l.GetResults()))
		}
		r := l.GetResults()[0]
		played := int32(2 * (i + 1))
		if r.GetCallers() != played || r.GetTurns() != int64(played) || r.GetFailedTurns() != 0 || r.GetFirstTokenP95Ms() != 100 || r.GetStartedAtUnixMs() == 0 {
			t.Fatalf("after job %d: the stopped step's figures %v; want %d callers played", i, r, played)
		}
	}
	w.enqueueLast(id) // the step's figures queue no next step
	if waiting, _ := w.p.Jobs.Waiting(ctx, filter); waiting {
		t.Fatal("jobs queued after the cancel")
	}
	// Listed, the stopped step and the one after it are cancelled: the
	// stopped step's figures neither met nor broke the budget.
	listed, _, _, err := w.a.ListInvocations(ctx, app.InvocationFilter{WorkspaceID: "ws", Limit: 10})
	if err != nil || len(listed) != 1 {
		t.Fatalf("listed %v %v", listed, err)
	}
	if l := listed[0]; l.Runs != 2 || l.Passed != 0 || l.Failed != 0 || l.Pending != 0 || l.Cancelled != 2 {
		t.Fatalf("the cancelled load test listed as %d steps, %d met, %d broke, %d pending, %d cancelled", l.Runs, l.Passed, l.Failed, l.Pending, l.Cancelled)
	}
}

// A retried start (same Idempotency-Key) answers the first load test,
// even with the active-invocation quota now full with it.
func TestARetriedLoadTestStartAnswersTheFirst(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.a.Limits.MaxActiveInvocations = 1
	c := w.c
	c.CommandID = "load-1"
	first, err := w.a.StartLoadTest(ctx, c, agentID, app.LoadTestInput{TestID: w.test, Steps: []int{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	again, err := w.a.StartLoadTest(ctx, c, agentID, app.LoadTestInput{TestID: w.test, Steps: []int{1, 2}})
	if err != nil || again.GetInvocationId() != first.GetInvocationId() || len(again.GetLoad().GetSteps()) != 2 {
		t.Fatalf("retry answered %v, %v; want %s", again.GetInvocationId(), err, first.GetInvocationId())
	}
}
