package app_test

import (
	"context"
	"errors"
	"math"
	"testing"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// Two judge models compared on the same labels: a model's verdict is the
// run's own when it judged it, else its re-judge vote; only the runs every
// model judged count, and no run's result changes.
func TestCompareJudgesOnTheSameLabels(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	inv := w.run(4).GetInvocationId()
	w.judged(inv, 0, domain.RunPassed, domain.ConditionSuccess)
	w.judged(inv, 1, domain.RunFailed, domain.ConditionFailure)
	w.judged(inv, 2, domain.RunPassed, domain.ConditionSuccess)
	w.judged(inv, 3, domain.RunFailed, domain.ConditionFailure)
	// Truth: runs 0 and 1 should pass, 2 and 3 fail.
	for i, right := range []bool{true, false, false, true} {
		b := right
		if _, err := w.a.LabelRun(ctx, w.c, inv, domain.RunID(inv, i), app.LabelInput{VerdictCorrect: &b}); err != nil {
			t.Fatal(err)
		}
	}
	targets, err := w.a.RejudgeTargets(ctx, "ws", app.RejudgeFilter{InvocationID: inv}, 10)
	if err != nil || len(targets) != 4 || targets[0].Result.GetConditionResult() == "" || targets[0].Test.GetTestId() != w.test {
		t.Fatalf("targets: %v %v", targets, err)
	}
	if _, err := w.a.RejudgeTargets(ctx, "ws", app.RejudgeFilter{InvocationID: "tinv_other"}, 10); !errors.Is(err, apperr.InvocationNotFound) {
		t.Fatalf("another invocation: %v", err)
	}
	// The other model votes on runs 0..2 (pass, pass, fail): all right.
	for i, vote := range []string{domain.ConditionSuccess, domain.ConditionSuccess, domain.ConditionFailure} {
		v := &testingv1.RejudgeVote{RejudgeId: "rjdg_1", WorkspaceId: "ws", InvocationId: inv, RunId: domain.RunID(inv, i),
			JudgeModel: "other-m", Result: vote}
		if err := w.a.RecordRejudge(ctx, w.c, v); err != nil {
			t.Fatal(err)
		}
	}
	cmp, err := w.a.CompareJudges(ctx, app.ReportQuery{WorkspaceID: "ws"}, []string{"judge-m", "other-m"})
	if err != nil {
		t.Fatal(err)
	}
	if cmp.Runs != 3 || cmp.Judges[0].Judged != 4 || cmp.Judges[1].Judged != 3 {
		t.Fatalf("comparison: %+v", cmp)
	}
	// judge-m on runs 0..2: a true pass, a false fail, a false pass.
	if c := cmp.Judges[0].Confusion; c != (domain.Confusion{TruePass: 1, FalseFail: 1, FalsePass: 1}) || math.Abs(c.Agreement()-1.0/3) > 1e-12 {
		t.Fatalf("judge-m: %+v", c)
	}
	if c := cmp.Judges[1].Confusion; c != (domain.Confusion{TruePass: 2, TrueFail: 1}) {
		t.Fatalf("other-m: %+v", c)
	}
	// The runs' own results are what judge-m said.
	labels, err := w.a.RunLabels(ctx, "ws", inv, domain.RunID(inv, 2))
	if err != nil || len(labels) != 1 || labels[0].GetJudgedResult() != domain.ConditionSuccess {
		t.Fatalf("labels of run 2: %v %v", labels, err)
	}
}

// A conversation's analysis is labelled; the report counts the label on
// the judge's row and on the agent's conversations' row, per criterion.
func TestConversationLabelsInTheReport(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	if _, err := w.a.LabelConversation(ctx, w.c, "conv_1", app.LabelInput{VerdictCorrect: yes()}); !errors.Is(err, apperr.ConversationNotAnalysed) {
		t.Fatalf("before any analysis: %v", err)
	}
	an := &testingv1.ConversationAnalysis{AnalysisId: "cana_1", WorkspaceId: "ws", ConversationId: "conv_1", AgentId: "agent_1",
		CallSuccessful: domain.ConditionFailure, Judge: &testingv1.ModelUsage{Provider: "openai", Model: "judge-m"},
		Criteria: []*testingv1.CriterionVerdict{{Id: "hours", Name: "Hours", Result: domain.ConditionSuccess},
			{Id: "refund", Name: "Refund", Result: domain.ConditionFailure}}}
	if _, err := w.a.RecordAnalysis(ctx, w.c, an); err != nil {
		t.Fatal(err)
	}
	if _, err := w.a.LabelConversation(ctx, w.c, "conv_1", app.LabelInput{VerdictCorrect: yes(),
		Criteria: []app.CriterionLabelInput{{ID: "tone", Correct: yes()}}}); apperr.KindOf(err) != apperr.Invalid {
		t.Fatalf("a criterion the analysis did not judge: %v", err)
	}
	l, err := w.a.LabelConversation(ctx, w.c, "conv_1", app.LabelInput{VerdictCorrect: no(),
		Criteria: []app.CriterionLabelInput{{ID: "refund", Correct: no()}, {ID: "hours", Correct: yes()}}})
	if err != nil {
		t.Fatal(err)
	}
	if l.GetAnalysisId() != "cana_1" || l.GetCorrectedResult() != domain.ConditionSuccess || l.GetJudgeModel() != "judge-m" ||
		l.GetCriteria()[0].GetJudgedResult() != domain.ConditionFailure || l.GetCriteria()[0].GetText() != "Refund" {
		t.Fatalf("label: %v", l)
	}
	rows, total, err := w.a.JudgeReport(ctx, app.ReportQuery{WorkspaceID: "ws"})
	if err != nil || total != 1 || len(rows) != 2 {
		t.Fatalf("report: %v %d %v", rows, total, err)
	}
	all, conv := rows[0], rows[1]
	if all.Scope() != app.ScopeAll || all.Confusion != (domain.Confusion{FalseFail: 1}) || len(all.Criteria) != 0 {
		t.Fatalf("the judge's row: %+v", all)
	}
	if conv.Scope() != app.ScopeConversations || conv.AgentID != "agent_1" || len(conv.Criteria) != 2 ||
		conv.Criteria[1].ID != "refund" || conv.Criteria[1].Agreed != 0 || conv.Criteria[1].Confusion != (domain.Confusion{FalseFail: 1}) {
		t.Fatalf("the agent's conversations: %+v", conv)
	}
	if _, total, _ := w.a.JudgeReport(ctx, app.ReportQuery{WorkspaceID: "ws", TestID: w.test}); total != 0 {
		t.Fatalf("a test's report counted a conversation")
	}
}

// A deleted conversation's labels are gone for the API: its label list
// and a new label answer conversation_not_found. Their verdicts, in the
// clear, still count in the judge report (their notes sealed with the
// conversation), as another conversation's do.
func TestADeletedConversationsLabelsAreGoneButCountInTheReport(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	keys := convseal.NewMemoryKeys()
	w.a.ConversationKeys = keys
	for _, conv := range []string{"conv_1", "conv_2"} {
		an := &testingv1.ConversationAnalysis{AnalysisId: "cana_" + conv, WorkspaceId: "ws", ConversationId: conv, AgentId: agentID,
			CallSuccessful: domain.ConditionFailure, Judge: &testingv1.ModelUsage{Provider: "openai", Model: "judge-m"}}
		if _, err := w.a.RecordAnalysis(ctx, w.c, an); err != nil {
			t.Fatal(err)
		}
		if _, err := w.a.LabelConversation(ctx, w.c, conv, app.LabelInput{VerdictCorrect: yes(), Note: "about " + conv}); err != nil {
			t.Fatal(err)
		}
	}
	if err := keys.Shred(ctx, "ws", "conv_1"); err != nil {
		t.Fatal(err)
	}
	w.a.ConversationDeleted = func(ws, conv string) bool { return ws == "ws" && conv == "conv_1" }
	if _, err := w.a.ConversationLabels(ctx, w.c, "conv_1"); !errors.Is(err, apperr.ConversationUnknown) {
		t.Fatalf("labels of a deleted conversation: %v; want conversation_not_found", err)
	}
	if _, err := w.a.LabelConversation(ctx, w.c, "conv_1", app.LabelInput{VerdictCorrect: no()}); !errors.Is(err, apperr.ConversationUnknown) {
		t.Fatalf("a label of a deleted conversation: %v; want conversation_not_found", err)
	}
	if got, err := w.a.ConversationLabels(ctx, w.c, "conv_2"); err != nil || len(got) != 1 {
		t.Fatalf("another conversation's labels: %v, %v", got, err)
	}
	rows, total, err := w.a.JudgeReport(ctx, app.ReportQuery{WorkspaceID: "ws"})
	if err != nil || total != 2 || len(rows) != 2 {
		t.Fatalf("report: %d labels in %d rows, %v; want both conversations' labels", total, len(rows), err)
	}
	for _, r := range rows {
		if r.Labels != 2 || r.Confusion != (domain.Confusion{TrueFail: 2}) {
			t.Fatalf("row %s: %+v; want both labels, each a confirmed failure", r.Scope(), r)
		}
	}
	if rows[1].Scope() != app.ScopeConversations || rows[1].AgentID != agentID {
		t.Fatalf("the agent's conversations' row: %+v", rows[1])
	}
}
