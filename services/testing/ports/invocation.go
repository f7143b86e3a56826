package ports

import (
	"bufio"
	"context"
	"encoding/json"
	"io"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// writeInvocation streams an invocation (spec 2.2) to w: its fields,
// result groups, then every run, finished runs first as read from the
// stream, then those still pending. Memory holds one bit per run and each
// test's definition once. A new invocation (created) is written as created:
// every run pending, whatever runners have done since.
func writeInvocation(ctx context.Context, a *app.App, w io.Writer, inv *testingv1.Invocation, created bool) error {
	return writeInvocationWith(ctx, a, w, inv, created, nil, nil)
}

// writeInvocationWith is writeInvocation that also calls each, when given,
// with every run's index and status as it is written, and then tail, when
// given, to write more fields of the object after test_runs.
func writeInvocationWith(ctx context.Context, a *app.App, w io.Writer, inv *testingv1.Invocation, created bool,
	each func(idx int, status string), tail func(*bufio.Writer) error) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	var bucketing any
	if inv.GetBucketingStatus() != "" {
		bucketing = inv.GetBucketingStatus()
	}
	head := map[string]any{
		"id": inv.GetInvocationId(), "agent_id": inv.GetAgentId(), "branch_id": inv.GetBranchId(),
		"created_at": inv.GetCreatedAtUnix(), "folder_id": inv.GetFolderId(), "repeat_count": max(inv.GetRepeatCount(), 1),
		"bucketing_status": bucketing, "cancelled": inv.GetStatus() == domain.InvocationCancelled,
		"status": inv.GetStatus(), "title": inv.GetTitle(), "ran_against_draft": false,
	}
	if e := inv.GetBucketingError(); e != "" {
		head["bucketing_error"] = e
	}
	if inv.GetCacheModelResponses() {
		head["cache_model_responses"] = true
	}
	b, _ := json.Marshal(head)
	bw.Write(b[:len(b)-1]) // keep the object open
	bw.WriteString(`,"result_groups":[`)
	groups, err := a.ResultGroups(ctx, inv, created)
	if err != nil {
		return err
	}
	for i, g := range groups {
		if i > 0 {
			bw.WriteByte(',')
		}
		if g == nil { // made as written: a large invocation has many runs
			g = app.PendingGroup(inv, i)
		}
		_ = enc.Encode(GroupView(g))
	}
	bw.WriteString(`],"test_runs":[`)
	views := map[uint64]RunTestView{}
	info := func(pt *testingv1.PlannedTest) (RunTestView, error) {
		if v, ok := views[pt.GetTestStreamSeq()]; ok {
			return v, nil
		}
		t, err := a.TestAt(ctx, pt.GetTestStreamSeq())
		if err != nil {
			return RunTestView{}, err
		}
		v := NewRunTestView(t)
		views[pt.GetTestStreamSeq()] = v
		return v, nil
	}
	var labels map[string]*testingv1.RunLabel
	if !created { // a new invocation has no labels yet
		if labels, err = a.CurrentLabels(ctx, inv); err != nil {
			return err
		}
	}
	repeat := int(max(inv.GetRepeatCount(), 1))
	first := true
	pending := pendingRuns{}
	var turns, firstTokens latencyTally // every agent turn's response time and first token, for the invocation's latency
	_, err = a.EachRun(ctx, inv, created, nil, func(idx int, runID string, res *testingv1.RunResult, unrun string) error {
		pt := inv.GetTests()[idx/repeat]
		ti, err := info(pt)
		if err != nil {
			return err
		}
		if !first {
			bw.WriteByte(',')
		}
		first = false
		if each != nil {
			each(idx, app.RunStatus(res, unrun))
		}
		if res == nil {
			return pending.write(bw, inv, idx/repeat, ti, runID, unrun)
		}
		turns.add(res.GetAgentTurnMs()...)
		firstTokens.add(res.GetAgentFirstTokenMs()...)
		view := RunView(inv, pt, ti, runID, res, "")
		if l := labels[runID]; app.Reviews(l, res) { // not a label of an earlier attempt
			view.Review = new(LabelView(l))
		}
		return writeRun(bw, view)
	})
	if err != nil {
		return err
	}
	bw.WriteString(`],"agent_latency":`)
	_ = enc.Encode(latencyOfTallies(&turns, &firstTokens))
	if tail != nil {
		bw.WriteString(`,`)
		if err := tail(bw); err != nil {
			return err
		}
	}
	bw.WriteString("}")
	return bw.Flush()
}

// writeInvocationCompared is writeInvocation of a stored invocation with
// a baseline_comparison against baseline after its runs. Memory grows
// with the number of distinct tests of both, not with their runs.
func writeInvocationCompared(ctx context.Context, a *app.App, w io.Writer, inv, baseline *testingv1.Invocation) error {
	now := app.NewTestStatuses(inv)
	return writeInvocationWith(ctx, a, w, inv, false, now.Add, func(bw *bufio.Writer) error {
		c, err := a.CompareWith(ctx, inv, now, baseline)
		if err != nil {
			return err
		}
		b, err := json.Marshal(c)
		if err != nil {
			return err
		}
		bw.WriteString(`"baseline_comparison":`)
		_, err = bw.Write(b)
		return err
	})
}
