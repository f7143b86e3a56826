package ports

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// A pending run written from its test's template is the run RunView
// describes, byte for byte, and valid JSON with every field.
func TestPendingRunTemplateMatchesTheView(t *testing.T) {
	test := &testingv1.Test{TestId: "test_1", Type: "llm", DefinitionJson: []byte(`{"name":"Hours","success_condition":"open",
	  "chat_history":[{"role":"user","message":"When are you open?","time_in_call_secs":2}],"environment":"staging"}`)}
	inv := &testingv1.Invocation{InvocationId: "tinv_1", WorkspaceId: "ws", AgentId: "agent_1", RepeatCount: 2, CreatedAtUnix: 1700000000,
		Status:         domain.InvocationRunning,
		RanByUserEmail: "a@example.com", Tests: []*testingv1.PlannedTest{{TestId: "test_1", TestName: "Hours", TestType: "llm"}}}
	tv := NewRunTestView(test)
	pending := pendingRuns{}
	for _, id := range []string{"trun_tinv_1_0", "trun_tinv_1_1"} {
		var fromTemplate, direct bytes.Buffer
		if err := pending.write(&fromTemplate, inv, 0, tv, id, app.UnrunStatus(inv, false)); err != nil {
			t.Fatal(err)
		}
		if err := writeRun(&direct, RunView(inv, inv.GetTests()[0], tv, id, nil, app.UnrunStatus(inv, false))); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fromTemplate.Bytes(), direct.Bytes()) {
			t.Fatalf("template:\n%s\ndirect:\n%s", fromTemplate.Bytes(), direct.Bytes())
		}
		var run map[string]any
		if err := json.Unmarshal(fromTemplate.Bytes(), &run); err != nil {
			t.Fatalf("invalid JSON: %v\n%s", err, fromTemplate.Bytes())
		}
		info, _ := run["test_info"].(map[string]any)
		if run["test_run_id"] != id || run["status"] != "pending" || run["environment"] != "staging" || info["name"] != "Hours" ||
			!reflect.DeepEqual(run["agent_responses"], []any{}) {
			t.Fatalf("pending run: %v", run)
		}
	}
}

// The judge report's rows answer every field the document requires, from
// a judge with no label yet (its figures null, its lists []) to a row
// with criteria, days and a comparison.
func TestJudgeReportViewsAnswerTheDocumentsShape(t *testing.T) {
	labelled := domain.Confusion{TruePass: 3, FalsePass: 1, FalseFail: 1, TrueFail: 2}
	rows := []*app.JudgeFigures{
		{JudgeProvider: "offline", JudgeModel: "offline-v2"},
		{JudgeProvider: "openai", JudgeModel: "gpt-4o", TestID: "test_1", TestName: "Hours", Labels: 8, Unknown: 1, Confusion: labelled,
			Flipped: 1, Pairs: 3, FlipRuns: 2,
			Criteria: []app.CriterionFigures{{ID: "condition_0", Text: "Says the hours", Labels: 7, Agreed: 5}},
			Series:   []app.DayFigures{{Date: "2026-11-30"}, {Date: "2026-12-01", Confusion: labelled}}},
		{JudgeProvider: "offline", JudgeModel: "offline-v2", AgentID: "agent_1", Labels: 2, Confusion: domain.Confusion{TruePass: 2},
			Criteria: []app.CriterionFigures{{ID: "hours", Text: "Gives the hours", Labels: 2, Agreed: 2, Confusion: domain.Confusion{TruePass: 1, TrueFail: 1}}}},
	}
	cmp := &app.Comparison{Models: []string{"gpt-4o", "offline-v2"}, Runs: 7,
		Judges: []app.ComparedJudge{{JudgeModel: "gpt-4o", Confusion: labelled, Judged: 7}, {JudgeModel: "offline-v2", Judged: 7}}}
	for name, report := range map[string]any{
		"no labels": map[string]any{"labels": 0, "judges": mapEach([]*app.JudgeFigures(nil), judgeView)},
		"rows":      map[string]any{"labels": 10, "judges": mapEach(rows, judgeView), "compare": comparisonView(cmp)},
	} {
		b, err := json.Marshal(report)
		if err != nil {
			t.Fatal(err)
		}
		if err := api.CheckJSON("JudgeReport", b); err != nil {
			t.Errorf("%s: %v\n%s", name, err, b)
		}
	}
	// The figures themselves: the test row's kappa, its unknown verdict
	// counted in its labels only, and a day with no label left null.
	v := judgeView(rows[1])
	if v.Labels != 8 || v.Agreement.Count != 5 || v.Agreement.N != 7 || v.CohensKappa == nil || *v.CohensKappa != 0.4167 ||
		v.Series[0].Agreement != nil || v.Series[0].CohensKappa != nil || *v.Series[1].Agreement != 0.7143 || v.Criteria[0].CohensKappa != nil ||
		*v.TestID != "test_1" || v.AgentID != nil || v.Scope != "test" {
		t.Fatalf("test row: %+v", v)
	}
	if c := judgeView(rows[2]).Criteria[0]; c.CohensKappa == nil || *c.CohensKappa != 1 {
		t.Fatalf("a conversation criterion's own kappa: %+v", c)
	}
	// One label, and each side one answer: κ is null, not 0, on the row,
	// its day and a conversation criterion alike.
	overturned := domain.Confusion{FalseFail: 1}
	one := judgeView(&app.JudgeFigures{JudgeProvider: "offline", JudgeModel: "offline-v2", AgentID: "agent_1", Labels: 1, Confusion: overturned,
		Criteria: []app.CriterionFigures{{ID: "refund", Labels: 1, Confusion: domain.Confusion{FalsePass: 1}}},
		Series:   []app.DayFigures{{Date: "2026-12-01", Confusion: overturned}}})
	if one.CohensKappa != nil || one.Series[0].CohensKappa != nil || one.Criteria[0].CohensKappa != nil {
		t.Fatalf("one overturned label: κ %v, its day's %v, its criterion's %v; want null", one.CohensKappa, one.Series[0].CohensKappa, one.Criteria[0].CohensKappa)
	}
}

// Labels answer every field the document requires, bare or with
// criteria, a corrected result and the judge's votes.
func TestLabelViewsAnswerTheDocumentsShape(t *testing.T) {
	for name, l := range map[string]*testingv1.RunLabel{
		"bare": {LabelId: "lbl_1", InvocationId: "tinv_1", RunId: "trun_1_0", TestId: "test_1", RunStatus: "passed", JudgedResult: "success", VerdictCorrect: true},
		"overturned": {LabelId: "lbl_2", InvocationId: "tinv_1", RunId: "trun_1_1", TestId: "test_1", TestName: "Hours", Attempt: 2,
			RunStatus: "failed", JudgedResult: "failure", JudgeProvider: "offline", JudgeModel: "offline-v2", CorrectedResult: "success",
			JudgeVotes: []*testingv1.JudgeVote{{Result: "failure"}, {Result: "success"}}, Criteria: []*testingv1.CriterionLabel{{Id: "condition_0", Text: "Says the hours"}},
			Note: "It did", ReviewerUserId: "u_1", ReviewerEmail: "qa@example.com", ReviewerName: "QA", LabelledAtUnixMs: 1_700_000_000_000},
	} {
		b, _ := json.Marshal(LabelView(l))
		if err := api.CheckJSON("RunLabel", b); err != nil {
			t.Errorf("run label %s: %v\n%s", name, err, b)
		}
	}
	c := &testingv1.ConversationLabel{LabelId: "lbl_3", ConversationId: "conv_1", AgentId: "agent_1", AnalysisId: "an_1", JudgedResult: "failure",
		CorrectedResult: "success", Criteria: []*testingv1.CriterionLabel{{Id: "refund", Text: "Refund window", JudgedResult: "failure"}}}
	b, _ := json.Marshal(ConversationLabelView(c))
	if err := api.CheckJSON("ConversationLabel", b); err != nil {
		t.Errorf("conversation label: %v\n%s", err, b)
	}
}

// The tests listing's rows (a test, a folder), a folder and an invocation
// summary answer the document's shapes: a root's parent is null, a
// folder counts its children, a test does not.
func TestListingViewsAnswerTheDocumentsShape(t *testing.T) {
	path := []app.FolderRef{{ID: "tfld_1", Name: "Billing"}}
	test := entryView(app.ListedEntry{Entry: app.Entry{ID: "test_1", Kind: app.KindTest, Name: "Hours", Type: "llm", ParentFolderID: "tfld_1",
		CreatedAtUnix: 1700000000, UpdatedAtUnix: 1700000100}, FolderPath: path})
	folder := entryView(app.ListedEntry{Entry: app.Entry{ID: "tfld_1", Kind: app.KindFolder, Name: "Billing", CreatedAtUnix: 1700000000},
		ChildrenCount: 3})
	page := map[string]any{"tests": []any{test, folder}, "next_cursor": nil, "has_more": false}
	invocations := map[string]any{"results": []any{invocationView(app.InvocationProgress{
		InvocationSummary: app.InvocationSummary{ID: "tinv_1", AgentID: "agent_1", Status: domain.InvocationRunning, Runs: 4, RepeatCount: 1},
		Passed:            1, Failed: 1, Pending: 2, Reliability: domain.Reliability{Runs: 2, Passed: 1, PassRate: 0.5}})},
		"next_cursor": nil, "has_more": false}
	for schema, v := range map[string]any{
		"TestPage":       page,
		"TestSummaries":  map[string]any{"tests": map[string]any{"test_1": test}},
		"Folder":         folderView(app.FolderDetails{Folder: &testingv1.Folder{FolderId: "tfld_2", Name: "Refunds", ParentFolderId: "tfld_1"}, FolderPath: path, ChildrenCount: 0}),
		"InvocationPage": invocations,
	} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := api.CheckJSON(schema, b); err != nil {
			t.Errorf("%s: %v\n%s", schema, err, b)
		}
	}
	if test.ChildrenCount != nil || folder.ChildrenCount == nil || *folder.ChildrenCount != 3 || folder.FolderParentID != nil ||
		test.FolderParentID == nil || *test.FolderParentID != "tfld_1" || len(test.FolderPath) != 1 || test.FolderPath[0].Name != "Billing" {
		t.Errorf("entries: test %+v, folder %+v", test, folder)
	}
	if b, _ := json.Marshal(test); bytes.Contains(b, []byte("children_count")) {
		t.Errorf("a test with a children count: %s", b)
	}
}

// A cancelled load test shows the step the cancel stopped as cancelled,
// with its start and the figures of the calls it made (when any job
// reported them), and the steps after it as cancelled, never started.
func TestACancelledLoadTestShowsTheStepItStopped(t *testing.T) {
	inv := &testingv1.Invocation{InvocationId: "tinv_1", Status: domain.InvocationCancelled, Load: &testingv1.LoadTest{
		Steps: []int32{2, 4, 8}, CurrentStep: 1, StepStartedAtUnixMs: 2000,
		Results: []*testingv1.LoadStepResult{{Callers: 2, Turns: 2, MetBudget: true, StartedAtUnixMs: 1000, FinishedAtUnixMs: 2000}},
	}}
	steps := LoadTestView(inv).Steps
	if s := steps[1]; s.Status != "cancelled" || s.StartedAtUnixMs == nil || *s.StartedAtUnixMs != 2000 || s.Turns != 0 {
		t.Fatalf("the stopped step, no job reported: %+v", s)
	}
	inv.Load.Results = append(inv.Load.Results, &testingv1.LoadStepResult{Callers: 2, Turns: 2, MetBudget: true, StartedAtUnixMs: 2000, FinishedAtUnixMs: 3000})
	steps = LoadTestView(inv).Steps
	if s := steps[0]; s.Status != "completed" {
		t.Fatalf("the step before the cancel: %+v", s)
	}
	if s := steps[1]; s.Status != "cancelled" || s.Turns != 2 || s.StartedAtUnixMs == nil || *s.StartedAtUnixMs != 2000 {
		t.Fatalf("the stopped step, one job reported: %+v", s)
	}
	if s := steps[2]; s.Status != "cancelled" || s.StartedAtUnixMs != nil {
		t.Fatalf("a step after the cancel: %+v", s)
	}
}
