package app_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// Rule tests of what the testing service reads back on the memory
// adapters: a test's reliability, a comparison with a baseline, and the
// invocations listing's progress and paging.

func allPass(int) string { return domain.RunPassed }

// ranEarlier is an invocation of the test's runs (repeat of them), each
// worked to its status, a minute older than whatever runs after it.
func (w *world) ranEarlier(repeat int, status func(run int) string) *testingv1.Invocation {
	w.t.Helper()
	inv := w.run(repeat)
	w.work(inv.GetInvocationId(), status)
	w.clock.Add(time.Minute)
	return inv
}

// A test's reliability counts its passed and failed runs in its recent
// invocations, newest first; runs that have not finished say nothing.
func TestReliabilityCountsFinishedRunsNewestFirst(t *testing.T) {
	w := newWorld(t)
	first := w.ranEarlier(4, passEven) // 2 of 4 pass
	second := w.ranEarlier(2, allPass)
	w.run(3) // queued, not run

	total, per, err := w.a.TestReliability(context.Background(), "ws", w.test, 3)
	if err != nil {
		t.Fatal(err)
	}
	// pass^3 = C(4,3) / C(6,3) = 4 / 20.
	if total.Runs != 6 || total.Passed != 4 || total.K != 3 || math.Abs(total.PassHatK-0.2) > 1e-9 || total.Low >= total.PassRate || total.High <= total.PassRate {
		t.Fatalf("over every invocation: %+v", total)
	}
	if len(per) != 2 || per[0].InvocationID != second.GetInvocationId() || per[0].Runs != 2 || per[0].Passed != 2 ||
		per[1].InvocationID != first.GetInvocationId() || per[1].Runs != 4 || per[1].Passed != 2 {
		t.Fatalf("per invocation, newest first: %+v", per)
	}

	never := w.testIn("Never run", "")
	if total, per, err := w.a.TestReliability(context.Background(), "ws", never, 3); err != nil || total.Runs != 0 || len(per) != 0 ||
		total.Low != 0 || total.High != 1 {
		t.Fatalf("a test never run: %+v %+v %v", total, per, err)
	}
}

// Only the most recent invocations count, so the report's cost is
// bounded whatever the test's history.
func TestReliabilityReadsOnlyTheRecentInvocations(t *testing.T) {
	w := newWorld(t)
	oldest := w.run(1)
	w.work(oldest.GetInvocationId(), func(int) string { return domain.RunFailed })
	for range app.ReliabilityInvocations {
		w.clock.Add(time.Minute)
		inv := w.run(1)
		w.work(inv.GetInvocationId(), allPass)
	}
	total, per, err := w.a.TestReliability(context.Background(), "ws", w.test, 1)
	if err != nil {
		t.Fatal(err)
	}
	if total.Runs != app.ReliabilityInvocations || total.Passed != total.Runs || len(per) != app.ReliabilityInvocations {
		t.Fatalf("the oldest (failed) invocation counted: %+v over %d invocations", total, len(per))
	}
}

// A comparison reads the baseline's statuses from its stored results: a
// test that passed there and fails now is a regression.
func TestCompareWithAStoredBaseline(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	baseline := w.ranEarlier(2, allPass)
	cur := w.run(2)
	now := app.NewTestStatuses(cur)
	now.Add(0, domain.RunPassed)
	now.Add(1, domain.RunFailed)

	got, err := w.a.CompareWith(ctx, cur, now, w.get(baseline.GetInvocationId()))
	if err != nil {
		t.Fatal(err)
	}
	if got.BaselineInvocationID != baseline.GetInvocationId() || len(got.Regressions) != 1 || got.Regressions[0].TestID != w.test ||
		got.Regressions[0].BaselineStatus == nil || *got.Regressions[0].BaselineStatus != domain.RunPassed ||
		len(got.Fixes)+len(got.NewFailures)+len(got.StillFailing) != 0 {
		t.Fatalf("comparison: %+v", got)
	}
}

// The listing shows where each invocation's runs are (from its counters
// while it runs), newest first, a page at a time.
func TestListInvocationsProgressAndPaging(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	worked := w.ranEarlier(4, passEven)
	waiting := w.run(3)
	w.clock.Add(time.Minute)
	cancelled := w.run(2)
	if _, err := w.a.Cancel(ctx, w.c, cancelled.GetInvocationId()); err != nil {
		t.Fatal(err)
	}

	var got []app.InvocationProgress
	q := app.InvocationFilter{WorkspaceID: "ws", Limit: 2}
	token := ""
	for {
		page, err := w.a.PageInvocations(ctx, q, token)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Rows) > 2 {
			t.Fatalf("a page of %d, limit 2", len(page.Rows))
		}
		got = append(got, page.Rows...)
		if !page.HasMore {
			break
		}
		if page.NextCursor == nil {
			t.Fatal("a page with more after it has no cursor")
		}
		token = *page.NextCursor
		// A cursor is bound to its listing: another filter or workspace
		// refuses it.
		for _, other := range []app.InvocationFilter{{WorkspaceID: "ws", AgentID: agentID, Limit: 2}, {WorkspaceID: "ws_other", Limit: 2}} {
			var v apperr.ValidationErrors
			if _, err := w.a.PageInvocations(ctx, other, token); !errors.As(err, &v) || len(v) != 1 || !slices.Equal(v[0].Loc, []any{"query", "cursor"}) {
				t.Fatalf("a cursor of another listing (%+v): %v", other, err)
			}
		}
	}
	type progress struct {
		id                                 string
		passed, failed, pending, cancelled int64
	}
	want := []progress{
		{cancelled.GetInvocationId(), 0, 0, 0, 2},
		{waiting.GetInvocationId(), 0, 0, 3, 0},
		{worked.GetInvocationId(), 2, 2, 0, 0},
	}
	if len(got) != len(want) {
		t.Fatalf("%d invocations listed, want %d", len(got), len(want))
	}
	for i, p := range got {
		if g := (progress{p.ID, p.Passed, p.Failed, p.Pending, p.Cancelled}); g != want[i] {
			t.Errorf("listed %d: %+v, want %+v", i, g, want[i])
		}
	}
	if r := got[2].Reliability; r.Runs != 4 || r.PassRate != 0.5 {
		t.Errorf("the worked invocation's pass rate: %+v", r)
	}
	// With no finished run nothing is known of the pass rate: its
	// interval is all of [0, 1].
	for _, p := range got[:2] {
		if r := p.Reliability; r.Runs != 0 || r.PassRate != 0 || r.Low != 0 || r.High != 1 {
			t.Errorf("invocation %s without a finished run: reliability %+v, want 0 in [0, 1]", p.ID, r)
		}
	}

	other := app.InvocationFilter{WorkspaceID: "ws_other", Limit: 10}
	if page, _, _, err := w.a.ListInvocations(ctx, other); err != nil || len(page) != 0 {
		t.Fatalf("another workspace sees %d invocations (%v)", len(page), err)
	}
}

// An invocation cancelled before it ever completed and then resubmitted
// is listed with the outcomes its runs had when cancelled (its first
// round's counters: it has no completion to keep them from), not with
// those runs as cancelled, while the resubmission runs and once it is
// cancelled too.
func TestListingAResubmissionOfANeverCompletedInvocation(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	inv := w.run(4)
	id := inv.GetInvocationId()
	for run := range 3 {
		w.workRun(id, run, passEven) // runs 0 and 2 pass, 1 fails; 3 waits
	}
	if _, err := w.a.Cancel(ctx, w.c, id); err != nil {
		t.Fatal(err)
	}
	if _, err := w.a.Resubmit(ctx, w.c, id, app.ResubmitInput{TestRunIDs: []string{domain.RunID(id, 3)}, AgentID: agentID}); err != nil {
		t.Fatal(err)
	}
	type progress struct{ passed, failed, pending, cancelled int64 }
	listed := func() progress {
		t.Helper()
		page, _, _, err := w.a.ListInvocations(ctx, app.InvocationFilter{WorkspaceID: "ws", Limit: 10})
		if err != nil || len(page) != 1 {
			t.Fatalf("%d invocations listed, %v", len(page), err)
		}
		return progress{page[0].Passed, page[0].Failed, page[0].Pending, page[0].Cancelled}
	}
	if got, want := listed(), (progress{2, 1, 1, 0}); got != want {
		t.Fatalf("resubmitted: listed %+v, want %+v", got, want)
	}
	if _, err := w.a.Cancel(ctx, w.c, id); err != nil {
		t.Fatal(err)
	}
	if got, want := listed(), (progress{2, 1, 0, 1}); got != want {
		t.Fatalf("cancelled again: listed %+v, want %+v", got, want)
	}
}

// A test's history carries the agent's latency in each invocation: every
// turn of its finished runs, whole and to the first token; a run that did
// not finish says nothing of it.
func TestReliabilityCarriesEachInvocationsLatency(t *testing.T) {
	w := newWorld(t)
	first := w.run(2)
	w.workWith(first.GetInvocationId(), allPass, func(run int, r *testingv1.RunResult) {
		r.AgentTurnMs, r.AgentFirstTokenMs = []int64{int64(100 + run), int64(200 + run)}, []int64{int64(10 + run), int64(20 + run)}
	})
	w.clock.Add(time.Minute)
	second := w.run(2)
	w.workWith(second.GetInvocationId(), func(run int) string {
		if run == 1 {
			return domain.RunCancelled
		}
		return domain.RunFailed
	}, func(run int, r *testingv1.RunResult) {
		r.AgentTurnMs, r.AgentFirstTokenMs = []int64{int64(900 + run)}, []int64{int64(90 + run)}
	})

	_, per, err := w.a.TestReliability(context.Background(), "ws", w.test, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(per) != 2 || per[0].InvocationID != second.GetInvocationId() || per[1].InvocationID != first.GetInvocationId() {
		t.Fatalf("per invocation, newest first: %+v", per)
	}
	if !slices.Equal(per[0].TurnMs, []int64{900}) || !slices.Equal(per[0].FirstTokenMs, []int64{90}) {
		t.Fatalf("newest: the cancelled run's turn counted, or the failed one's not: %v %v", per[0].TurnMs, per[0].FirstTokenMs)
	}
	if !slices.Equal(per[1].TurnMs, []int64{100, 200, 101, 201}) || !slices.Equal(per[1].FirstTokenMs, []int64{10, 20, 11, 21}) {
		t.Fatalf("oldest: every turn of both runs, in run order: %v %v", per[1].TurnMs, per[1].FirstTokenMs)
	}
}

// The branch filter: main selects what ran on main, named or not (an
// invocation that named no branch stores ""); another branch only itself.
func TestTheMainBranchFilterSelectsInvocationsThatNamedNone(t *testing.T) {
	for _, c := range []struct {
		filter, stored string
		want           bool
	}{
		{"main", "", true}, {"main", "main", true}, {"main", "dev", false},
		{"dev", "dev", true}, {"dev", "", false}, {"", "", true}, {"", "dev", true},
	} {
		f := app.InvocationFilter{WorkspaceID: "ws", BranchID: c.filter}
		if got := f.Matches(app.InvocationSummary{WorkspaceID: "ws", BranchID: c.stored}); got != c.want {
			t.Errorf("branch_id=%q on an invocation stored with %q: %v, want %v", c.filter, c.stored, got, c.want)
		}
	}
}

// While a resubmission runs, the listing shows its runs pending and the
// others as the last completion left them: resubmitting two passed runs
// of 2 passed and 2 failed lists 0 passed, 2 failed, 2 pending (it
// listed the passes twice: 2 passed, 0 failed); done again, they count
// as they now ended.
func TestAResubmissionInProgressIsListedExactly(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	id := w.ranEarlier(4, passEven).GetInvocationId() // runs 0 and 2 passed
	w.complete(id)
	if _, err := w.a.Resubmit(ctx, w.c, id, app.ResubmitInput{TestRunIDs: []string{domain.RunID(id, 0), domain.RunID(id, 2)}, AgentID: agentID}); err != nil {
		t.Fatal(err)
	}
	listed := func() [4]int64 {
		t.Helper()
		page, _, _, err := w.a.ListInvocations(ctx, app.InvocationFilter{WorkspaceID: "ws", Limit: 10})
		if err != nil || len(page) != 1 {
			t.Fatalf("listing: %d rows, %v", len(page), err)
		}
		p := page[0]
		return [4]int64{p.Passed, p.Failed, p.Pending, p.Cancelled}
	}
	if got := listed(); got != [4]int64{0, 2, 2, 0} {
		t.Fatalf("while the resubmitted runs wait: passed, failed, pending, cancelled %v, want [0 2 2 0]", got)
	}
	w.enqueueLast(id)
	w.workRun(id, 0, func(int) string { return domain.RunFailed })
	if got := listed(); got != [4]int64{0, 3, 1, 0} {
		t.Fatalf("one resubmitted run failed this time: %v, want [0 3 1 0]", got)
	}
}
