package app

import (
	"context"
	"fmt"
	"sort"

	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// TestAt reads the version of a test stored at seq of stream TESTING.
func (a *App) TestAt(ctx context.Context, seq uint64) (*testingv1.Test, error) {
	msg, err := esproto.At(ctx, a.Tests.Store, seq)
	if err != nil {
		return nil, err
	}
	t, ok := events.StateOf[*testingv1.Test](msg)
	if !ok {
		return nil, fmt.Errorf("seq %d holds no test", seq)
	}
	return t, nil
}

// DefinitionAt is the definition of the version of a test stored at seq
// of stream TESTING: the version an invocation pinned.
func (a *App) DefinitionAt(ctx context.Context, seq uint64) (domain.TestInput, error) {
	t, err := a.TestAt(ctx, seq)
	if err != nil {
		return domain.TestInput{}, err
	}
	return domain.ParseDefinition(t.GetDefinitionJson())
}

// runOf is the result a RunCompleted event carries.
func runOf(msg proto.Message, err error) (*testingv1.RunResult, error) {
	if err != nil {
		return nil, err
	}
	ev, ok := msg.(*testingv1.RunCompleted)
	if !ok {
		return nil, fmt.Errorf("not a run result: %T", msg)
	}
	return ev.GetRun(), nil
}

// EachRunResult calls fn with the current result of every run of an
// invocation that has one.
func (a *App) EachRunResult(ctx context.Context, inv *testingv1.Invocation, fn func(*testingv1.RunResult) error) error {
	return a.eachRunResultAfter(ctx, inv, 0, func(r *testingv1.RunResult, _ uint64) error { return fn(r) })
}

// eachRunResultAfter is EachRunResult with each result's sequence in the
// runs log, from the results stored after seq (those before are skipped
// without being decoded).
func (a *App) eachRunResultAfter(ctx context.Context, inv *testingv1.Invocation, seq uint64, fn func(*testingv1.RunResult, uint64) error) error {
	runs, err := events.RunsOfInvocation(inv.GetWorkspaceId(), inv.GetInvocationId())
	if err != nil {
		return err
	}
	return a.scan(ctx, inv.GetWorkspaceId(), runs, a.Runs.EachLast,
		func(m Record) error {
			if m.Seq <= seq {
				return nil
			}
			r, err := runOf(esproto.Decode(m))
			if err != nil {
				return err
			}
			return fn(r, m.Seq)
		})
}

// ResultGroups are the invocation's result groups, in test order: the
// stored ones once bucketing has completed; while it is pending, a test
// with runs in the running round (every test of a new invocation, the
// resubmitted runs' tests of a resubmission) has one bucket of all its
// runs, status pending (nil here: see pendingGroup), and the other tests
// keep their groups of the round before (pending too if they have none).
// Otherwise none.
func (a *App) ResultGroups(ctx context.Context, inv *testingv1.Invocation, created bool) ([]*testingv1.ResultGroup, error) {
	status := inv.GetBucketingStatus()
	if status != domain.BucketingCompleted && status != domain.BucketingPending {
		return nil, nil
	}
	var stored []*testingv1.ResultGroup
	if !created && (status == domain.BucketingCompleted || len(inv.GetResubmissions()) > 0) {
		subjects, err := events.ResultGroupsOfInvocation(inv.GetWorkspaceId(), inv.GetInvocationId())
		if err != nil {
			return nil, err
		}
		err = a.scan(ctx, inv.GetWorkspaceId(), subjects, a.Runs.EachLast, func(m Record) error {
			msg, err := esproto.Decode(m)
			if err != nil {
				return err
			}
			if ev, ok := msg.(*testingv1.ResultGroupComputed); ok {
				stored = append(stored, ev.GetGroup())
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		sort.Slice(stored, func(i, j int) bool { return stored[i].GetTestIndex() < stored[j].GetTestIndex() })
	}
	if status == domain.BucketingCompleted && !created {
		return stored, nil
	}
	repeat := int(max(inv.GetRepeatCount(), 1))
	running := map[int]bool{} // tests with runs in the running round; nil: all
	if rs := inv.GetResubmissions(); len(rs) > 0 && !created {
		for _, id := range rs[len(rs)-1].GetRunIds() {
			if idx, err := domain.RunIndex(inv.GetInvocationId(), id); err == nil {
				running[idx/repeat] = true
			}
		}
	} else {
		running = nil
	}
	before := map[int]*testingv1.ResultGroup{}
	for _, g := range stored {
		before[int(g.GetTestIndex())] = g
	}
	out := make([]*testingv1.ResultGroup, len(inv.GetTests()))
	for i := range out {
		if g, ok := before[i]; ok && running != nil && !running[i] {
			out[i] = g
		}
	}
	return out, nil
}

// PendingGroup is test i's group while its runs are outstanding: one
// bucket of all its runs, status pending.
func PendingGroup(inv *testingv1.Invocation, i int) *testingv1.ResultGroup {
	repeat := int(max(inv.GetRepeatCount(), 1))
	ids := make([]string, repeat)
	for r := range ids {
		ids[r] = domain.RunID(inv.GetInvocationId(), i*repeat+r)
	}
	b := domain.PendingBucket(ids)
	pt := inv.GetTests()[i]
	return &testingv1.ResultGroup{TestId: pt.GetTestId(), TestName: pt.GetTestName(), WorkflowNodeId: pt.GetWorkflowNodeId(), TestIndex: int32(i),
		Buckets: []*testingv1.Bucket{{TestRunIds: b.RunIDs, Title: b.Title, Reason: b.Reason, Status: b.Status}}}
}

// RunStatus is the status of a run: its result's, or unrun without one.
func RunStatus(res *testingv1.RunResult, unrun string) string {
	if res == nil {
		return unrun
	}
	return res.GetStatus()
}

// EachRun calls fn with every run of inv: first those with a result of
// their newest attempt, in stream order, then the others in index order,
// with a nil result and their status without one (pending or cancelled).
// A new invocation (created) reads no result. With only, a result is used
// only for the runs only holds (the others are shown without one, as
// when only was taken). It returns the runs that had a result. Memory
// holds one bit per run.
func (a *App) EachRun(ctx context.Context, inv *testingv1.Invocation, created bool, only domain.Bitset,
	fn func(idx int, runID string, res *testingv1.RunResult, unrun string) error) (domain.Bitset, error) {
	repeat := int(max(inv.GetRepeatCount(), 1))
	total := len(inv.GetTests()) * repeat
	seen := domain.NewBitset(total)
	expected := ExpectedAttempts(inv)
	latestAttempt := int32(0) // the running resubmission's attempt
	if rs := inv.GetResubmissions(); len(rs) > 0 {
		latestAttempt = rs[len(rs)-1].GetAttempt()
	}
	if !created { // a new invocation is written as created: no result is read
		err := a.EachRunResult(ctx, inv, func(r *testingv1.RunResult) error {
			idx, err := domain.RunIndex(inv.GetInvocationId(), r.GetRunId())
			if err != nil || idx >= total || seen.Has(idx) || (only != nil && !only.Has(idx)) {
				return nil
			}
			if r.GetAttempt() < max(expected[r.GetRunId()], 1) {
				return nil // a newer attempt is pending: shown below
			}
			seen.Set(idx)
			return fn(idx, r.GetRunId(), r, "")
		})
		if err != nil {
			return nil, err
		}
	}
	for idx := range total {
		if !seen.Has(idx) {
			runID := domain.RunID(inv.GetInvocationId(), idx)
			if err := fn(idx, runID, nil, UnrunStatus(inv, expected[runID] == latestAttempt)); err != nil {
				return nil, err
			}
		}
	}
	return seen, nil
}

// InvocationProgress is an invocation as listings show it: its summary
// and where its runs are.
type InvocationProgress struct {
	InvocationSummary
	Passed, Failed, Pending, Cancelled int64
	// Reliability is the pass rate of its finished runs and its 95%
	// interval (pass^k belongs to one test's repeats, not to a mix of
	// tests).
	Reliability domain.Reliability
}

// ListInvocations returns one page of invocations, newest first, the
// position of its last one and whether more follow.
func (a *App) ListInvocations(ctx context.Context, q InvocationFilter) ([]InvocationProgress, *InvocationPosition, bool, error) {
	page, more, err := a.ReadModel.PageInvocations(ctx, q)
	if err != nil {
		return nil, nil, false, err
	}
	out := make([]InvocationProgress, 0, len(page))
	for _, d := range page {
		runs := d.Runs
		passed, failed := d.PassedCount, d.FailedCount
		pending := int64(-1) // the runs not yet done, when not all the rest
		switch {
		case d.Load:
			// Its steps, counted as they finish; none is a run of a test.
			out = append(out, loadProgress(d))
			continue
		case d.Status == domain.InvocationCompleted:
			pending = 0 // a run without a result was cancelled before it had a result
		case d.Attempt <= 1:
			if passed, failed, err = a.firstRound(ctx, d); err != nil {
				return nil, nil, false, err
			}
		default:
			// A resubmission: its runs are pending until done; the others
			// keep the outcome of the last completion, or, with none (the
			// invocation was cancelled before it ever completed: no
			// outcome counted), of its first round.
			if passed+failed == 0 {
				if passed, failed, err = a.firstRound(ctx, d); err != nil {
					return nil, nil, false, err
				}
			}
			done, donePassed, err := a.Counts(ctx, d.ID, d.Attempt)
			if err != nil {
				return nil, nil, false, err
			}
			resubmitted := max(d.AttemptRuns-done, 0)
			if d.PriorKnown {
				// The others as the last completion left them (its counts
				// less the resubmitted runs' outcomes then), and those of
				// the resubmitted runs done again so far.
				passed = max(passed-d.PriorPassed, 0) + donePassed
				failed = max(failed-d.PriorFailed, 0) + max(done-donePassed, 0)
			}
			passed = min(passed, runs-resubmitted)
			failed = min(failed, max(runs-resubmitted-passed, 0))
			if d.Status == domain.InvocationRunning {
				pending = resubmitted
			}
		}
		unrun := max(runs-passed-failed, 0)
		if pending < 0 || pending > unrun {
			pending = unrun
		}
		cancelled := unrun - pending
		if d.Status == domain.InvocationCancelled {
			cancelled, pending = unrun, 0
		}
		out = append(out, InvocationProgress{InvocationSummary: d, Passed: passed, Failed: failed, Pending: pending,
			Cancelled: cancelled, Reliability: domain.NewReliability(passed, passed+failed, 1)})
	}
	var last *InvocationPosition
	if len(page) > 0 {
		at := page[len(page)-1].PositionOf()
		last = &at
	}
	return out, last, more, nil
}

// loadProgress is a load test as listed: its steps met and broke the
// budget, the steps to come pending (cancelled when it was), and no
// reliability, which is of runs.
func loadProgress(d InvocationSummary) InvocationProgress {
	p := InvocationProgress{InvocationSummary: d, Passed: d.PassedCount, Failed: d.FailedCount, Reliability: domain.NewReliability(0, 0, 1)}
	unrun := max(d.Runs-d.PassedCount-d.FailedCount, 0)
	if d.Status == domain.InvocationRunning {
		p.Pending = unrun
	} else {
		p.Cancelled = unrun
	}
	return p
}

// firstRound is the outcome of an invocation's first round as its
// counters have it so far.
func (a *App) firstRound(ctx context.Context, d InvocationSummary) (passed, failed int64, err error) {
	done, p, err := a.Counts(ctx, d.ID, 1)
	if err != nil {
		return 0, 0, err
	}
	done, passed = min(done, d.Runs), min(p, d.Runs)
	return passed, max(done-passed, 0), nil
}

// UnrunStatus is the status of a run without a result for its newest
// attempt: pending while it may still run, else cancelled (the invocation
// was cancelled before the run started, and no later resubmission, or
// not the running one (inLatestRound), named it).
func UnrunStatus(inv *testingv1.Invocation, inLatestRound bool) string {
	switch {
	case inv.GetStatus() == domain.InvocationCancelled, inv.GetStatus() == domain.InvocationCompleted:
		return domain.RunCancelled
	case len(inv.GetResubmissions()) > 0 && !inLatestRound:
		return domain.RunCancelled
	}
	return domain.RunPending
}
