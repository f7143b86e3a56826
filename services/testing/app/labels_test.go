package app_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	events "github.com/voiceai-platform/voiceai/proto-events"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// judged stores a run's result as a runner does: its status, the judge's
// verdict and votes, the judge model.
func (w *world) judged(inv string, idx int, status, verdict string, votes ...string) {
	w.t.Helper()
	w.judgedBy("judge-m", inv, idx, status, verdict, votes...)
}

func (w *world) judgedBy(model, inv string, idx int, status, verdict string, votes ...string) {
	w.t.Helper()
	w.judgedAt(1, model, inv, idx, status, verdict, votes...)
}

// judgedAt stores the run's result of attempt (a resubmission's, from 2).
func (w *world) judgedAt(attempt int32, model, inv string, idx int, status, verdict string, votes ...string) {
	w.t.Helper()
	ctx := context.Background()
	run := &testingv1.RunResult{RunId: domain.RunID(inv, idx), InvocationId: inv, WorkspaceId: "ws", Attempt: attempt, Status: status,
		TestIndex: 0, RepeatIndex: int32(idx), ConditionResult: verdict, Usage: &testingv1.ModelUsage{Provider: "openai", Model: model}}
	for _, v := range votes {
		run.JudgeVotes = append(run.JudgeVotes, &testingv1.JudgeVote{Result: v})
	}
	subject, _ := events.RunSubject("ws", inv, run.RunId)
	meta := &commonv1.EventMeta{EventId: "evt_" + inv + strconv.Itoa(idx) + "_" + strconv.Itoa(int(attempt)), WorkspaceId: "ws"}
	ev, err := esproto.Encode(ctx, meta, &testingv1.RunCompleted{Meta: meta, Run: run})
	if err != nil {
		w.t.Fatal(err)
	}
	h := eventlog.Header{events.HeaderEventType: {ev.Type}}
	if _, err := w.p.Runs.Publish(ctx, app.Message{Subject: subject, ID: run.RunId + "#" + strconv.Itoa(int(attempt)), Header: h, Data: ev.Data}); err != nil {
		w.t.Fatal(err)
	}
}

func yes() *bool { b := true; return &b }
func no() *bool  { b := false; return &b }

// A label names what it reviewed and who gave it; the run's result is
// untouched, a later label supersedes an earlier one and both are kept,
// and the report counts each run's current label.
func TestLabelsAndTheJudgeReport(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	inv := w.run(4).GetInvocationId()
	w.judged(inv, 0, domain.RunPassed, domain.ConditionSuccess)
	w.judged(inv, 1, domain.RunFailed, domain.ConditionFailure, "failure", "success", "failure")
	w.judged(inv, 2, domain.RunPassed, domain.ConditionSuccess)
	// run 3 has no result.

	if _, err := w.a.LabelRun(ctx, w.c, inv, domain.RunID(inv, 3), app.LabelInput{VerdictCorrect: yes()}); !errors.Is(err, apperr.RunNotFinished) {
		t.Fatalf("a run without a result: %v", err)
	}
	if _, err := w.a.LabelRun(ctx, w.c, inv, domain.RunID(inv, 9), app.LabelInput{VerdictCorrect: yes()}); !errors.Is(err, apperr.TestRunNotFound) {
		t.Fatalf("a run the invocation does not have: %v", err)
	}
	bad := app.LabelInput{VerdictCorrect: yes(), Criteria: []app.CriterionLabelInput{{ID: "condition_1", Correct: yes()}}}
	if _, err := w.a.LabelRun(ctx, w.c, inv, domain.RunID(inv, 0), bad); err == nil {
		t.Fatal("a criterion the test does not have was accepted")
	}

	first, err := w.a.LabelRun(ctx, w.c, inv, domain.RunID(inv, 0), app.LabelInput{VerdictCorrect: no(), Note: "hours wrong",
		Criteria: []app.CriterionLabelInput{{ID: "condition_0", Correct: no()}}})
	if err != nil {
		t.Fatal(err)
	}
	if first.GetJudgedResult() != domain.ConditionSuccess || first.GetCorrectedResult() != domain.ConditionFailure ||
		first.GetReviewerEmail() != "u1@example.com" || first.GetJudgeModel() != "judge-m" || first.GetCriteria()[0].GetText() != "states the hours" {
		t.Fatalf("label %v", first)
	}
	// Overturned, then confirmed after all: the second is current.
	w.c.CommandID = "cmd-1"
	second, err := w.a.LabelRun(ctx, w.c, inv, domain.RunID(inv, 0), app.LabelInput{VerdictCorrect: yes()})
	if err != nil {
		t.Fatal(err)
	}
	again, err := w.a.LabelRun(ctx, w.c, inv, domain.RunID(inv, 0), app.LabelInput{VerdictCorrect: no()})
	if err != nil || again.GetLabelId() != second.GetLabelId() {
		t.Fatalf("a retried label answers the first: %v %v", again, err)
	}
	w.c.CommandID = ""
	all, err := w.a.RunLabels(ctx, "ws", inv, domain.RunID(inv, 0))
	if err != nil || len(all) != 2 || all[0].GetLabelId() != first.GetLabelId() || all[1].GetLabelId() != second.GetLabelId() {
		t.Fatalf("history: %v %v", all, err)
	}
	if _, err := w.a.LabelRun(ctx, w.c, inv, domain.RunID(inv, 1), app.LabelInput{VerdictCorrect: no()}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.a.LabelRun(ctx, w.c, inv, domain.RunID(inv, 2), app.LabelInput{VerdictCorrect: no()}); err != nil {
		t.Fatal(err)
	}
	// The run's own result is what the runner stored.
	stored, _ := events.RunSubject("ws", inv, domain.RunID(inv, 0))
	rec, _, _ := w.p.Runs.Last(ctx, stored)
	msg, _ := esproto.Decode(rec)
	if r := msg.(*testingv1.RunCompleted).GetRun(); r.GetConditionResult() != domain.ConditionSuccess || r.GetStatus() != domain.RunPassed {
		t.Fatalf("the run's result changed: %v", r)
	}

	// Another judge re-judged run 3, unanimously, and nobody labelled it.
	w.judgedBy("other-m", inv, 3, domain.RunFailed, domain.ConditionFailure, "failure", "failure")

	// Current labels: run 0 pass confirmed (true pass), run 1 failure
	// overturned (false fail), run 2 pass overturned (false pass).
	rows, total, err := w.a.JudgeReport(ctx, app.ReportQuery{WorkspaceID: "ws"})
	if err != nil || total != 3 || len(rows) != 4 {
		t.Fatalf("report: %d rows, %d labels, %v", len(rows), total, err)
	}
	if other := rows[3]; other.JudgeModel != "other-m" || other.Labels != 0 || other.Pairs != 1 || other.Flipped != 0 || other.TestID != w.test {
		t.Fatalf("a judge with votes and no label: %+v", other)
	}
	if rows, _, _ := w.a.JudgeReport(ctx, app.ReportQuery{WorkspaceID: "ws", JudgeModel: "judge-m"}); len(rows) != 2 {
		t.Fatalf("one judge: %d rows", len(rows))
	}
	all3 := rows[0]
	if all3.TestID != "" || all3.Confusion != (domain.Confusion{TruePass: 1, FalseFail: 1, FalsePass: 1}) || all3.Labels != 3 {
		t.Fatalf("the judge over every test: %+v", all3)
	}
	if rows[1].TestID != w.test || rows[1].Pairs != 3 || rows[1].Flipped != 2 || rows[1].FlipRuns != 1 {
		t.Fatalf("flips of run 1's votes: %+v", rows[1])
	}
	if len(rows[1].Criteria) != 0 { // run 0's criterion label was superseded
		t.Fatalf("criteria: %+v", rows[1].Criteria)
	}

	// The queue: run 1 (failed, votes disagreed) is labelled; with
	// labelled runs kept it shows, with its label.
	page, err := w.a.ReviewQueue(ctx, app.ReviewQuery{WorkspaceID: "ws", Limit: 10, SamplePerMille: 0}, "")
	q := page.Rows
	if err != nil || len(q) != 1 || q[0].Result.GetRunId() != domain.RunID(inv, 3) {
		t.Fatalf("the one unlabelled failure, no pass sampled: %v %v", q, err)
	}
	page, err = w.a.ReviewQueue(ctx, app.ReviewQuery{WorkspaceID: "ws", Limit: 10, SamplePerMille: 1000, IncludeLabelled: true}, "")
	q = page.Rows
	if err != nil || len(q) != 4 || q[1].Result.GetRunId() != domain.RunID(inv, 1) || len(q[1].Reasons) != 2 ||
		q[1].Reasons[0] != app.ReasonFailed || q[1].Reasons[1] != app.ReasonVotesDisagreed || q[1].Label == nil ||
		q[0].Reasons[0] != app.ReasonSampledPass || q[0].Conditions[0] != "states the hours" {
		t.Fatalf("queue %+v %v", q, err)
	}
}

// A label reviews one attempt of its run: once the run is resubmitted
// and judged anew, the new verdict is queued for review again and the old
// label does not review it (it stays in the run's labels); a label of the
// new verdict takes it out of the queue again.
func TestANewAttemptsVerdictIsReviewedAgain(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	inv := w.run(1).GetInvocationId()
	run := domain.RunID(inv, 0)
	w.judged(inv, 0, domain.RunFailed, domain.ConditionFailure)
	first, err := w.a.LabelRun(ctx, w.c, inv, run, app.LabelInput{VerdictCorrect: no()})
	if err != nil || first.GetAttempt() != 1 {
		t.Fatalf("label of attempt 1: %v %v", first, err)
	}
	queue := func(includeLabelled bool) []app.ReviewItem {
		t.Helper()
		page, err := w.a.ReviewQueue(ctx, app.ReviewQuery{WorkspaceID: "ws", Limit: 10, IncludeLabelled: includeLabelled}, "")
		if err != nil {
			t.Fatal(err)
		}
		return page.Rows
	}
	if q := queue(false); len(q) != 0 {
		t.Fatalf("a labelled run is queued: %+v", q)
	}

	// Resubmitted, the run fails again: a verdict nobody reviewed.
	w.judgedAt(2, "judge-m", inv, 0, domain.RunFailed, domain.ConditionFailure)
	q := queue(false)
	if len(q) != 1 || q[0].Result.GetRunId() != run || q[0].Result.GetAttempt() != 2 || q[0].Label != nil {
		t.Fatalf("the new verdict is not queued for review: %+v", q)
	}
	if q := queue(true); len(q) != 1 || q[0].Label != nil {
		t.Fatalf("the new verdict shows attempt 1's label as its own: %+v", q)
	}
	if app.Reviews(first, q[0].Result) {
		t.Fatal("attempt 1's label reviews attempt 2's verdict")
	}
	second, err := w.a.LabelRun(ctx, w.c, inv, run, app.LabelInput{VerdictCorrect: yes()})
	if err != nil || second.GetAttempt() != 2 || !app.Reviews(second, q[0].Result) {
		t.Fatalf("label of attempt 2: %v %v", second, err)
	}
	if q := queue(false); len(q) != 0 {
		t.Fatalf("the labelled new verdict is still queued: %+v", q)
	}
	if q := queue(true); len(q) != 1 || q[0].Label.GetLabelId() != second.GetLabelId() {
		t.Fatalf("with labelled runs: %+v, want attempt 2's label", q)
	}
	if all, err := w.a.RunLabels(ctx, "ws", inv, run); err != nil || len(all) != 2 || all[0].GetAttempt() != 1 {
		t.Fatalf("the run's labels: %v %v; want both attempts'", all, err)
	}
}

// A tool test's run is checked by its calls, not judged: its label names
// no judge model, and the report counts it for none (it credited the
// model that played the agent with a tool checker's verdict).
func TestAToolTestsLabelCountsForNoJudge(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	tool, err := w.a.CreateTest(ctx, w.c, []byte(`{"type":"tool","name":"Books a table","tool_call_parameters":{"referenced_tool":{"id":"book","type":"client"},"parameters":[]}}`))
	if err != nil {
		t.Fatal(err)
	}
	w.test = tool.GetTestId()
	inv := w.run(1).GetInvocationId()
	w.judged(inv, 0, domain.RunFailed, domain.ConditionFailure)
	label, err := w.a.LabelRun(ctx, w.c, inv, domain.RunID(inv, 0), app.LabelInput{VerdictCorrect: yes()})
	if err != nil || label.GetJudgeModel() != "" || label.GetTestType() != domain.TypeTool {
		t.Fatalf("label %v %v, want no judge model", label, err)
	}
	rows, total, err := w.a.JudgeReport(ctx, app.ReportQuery{WorkspaceID: "ws"})
	if err != nil || total != 0 {
		t.Fatalf("report: %+v, %d labels counted, %v", rows, total, err)
	}
	// It has no success conditions to label one by one, and says so.
	_, err = w.a.LabelRun(ctx, w.c, inv, domain.RunID(inv, 0), app.LabelInput{VerdictCorrect: yes(), Criteria: []app.CriterionLabelInput{{ID: "condition_0", Correct: yes()}}})
	if v, ok := err.(apperr.ValidationErrors); !ok || v[0].Msg != "The run's test has no success conditions: label its verdict alone" {
		t.Fatalf("a criterion of a test without conditions: %v", err)
	}
}
