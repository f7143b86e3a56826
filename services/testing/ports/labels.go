package ports

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/wire"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// LabelRun records a reviewer's label of a run's verdict (201).
func (h *Handlers) LabelRun(c *api.Call) (any, error) {
	var in app.LabelInput
	if err := c.Body(&in); err != nil {
		return nil, err
	}
	l, err := h.App.LabelRun(c.Context(), c.Caller(), c.PathID("invocation_id"), c.PathID("run_id"), in)
	return api.View(l, err, LabelView)
}

// RunLabels answers every label of a run, oldest first.
func (h *Handlers) RunLabels(c *api.Call) (any, error) {
	labels, err := h.App.RunLabels(c.Context(), c.Caller().WorkspaceID, c.PathID("invocation_id"), c.PathID("run_id"))
	if err != nil {
		return nil, err
	}
	return map[string]any{"labels": mapEach(labels, LabelView)}, nil
}

// LabelConversation records a reviewer's label of a conversation's
// analysis (201).
func (h *Handlers) LabelConversation(c *api.Call) (any, error) {
	return api.CommandOn(c, h.App.LabelConversation, ConversationLabelView)
}

// ConversationLabels answers every label of a conversation's analyses,
// oldest first.
func (h *Handlers) ConversationLabels(c *api.Call) (any, error) {
	labels, err := h.App.ConversationLabels(c.Context(), c.Caller(), c.ID())
	if err != nil {
		return nil, err
	}
	return map[string]any{"labels": mapEach(labels, ConversationLabelView)}, nil
}

// ConversationLabelView is a conversation label as the API shows it.
func ConversationLabelView(l *testingv1.ConversationLabel) wire.ConversationLabel {
	criteria := make([]wire.CriterionLabel, len(l.GetCriteria()))
	for i, c := range l.GetCriteria() {
		criteria[i] = wire.CriterionLabel{ID: c.GetId(), Text: c.GetText(), Correct: c.GetCorrect(), JudgedResult: c.GetJudgedResult()}
	}
	return wire.ConversationLabel{
		LabelID: l.GetLabelId(), ConversationID: l.GetConversationId(), AgentID: l.GetAgentId(),
		Reviewed: wire.AnalysisReviewed{AnalysisID: l.GetAnalysisId(), CallSuccessful: l.GetJudgedResult(),
			JudgeProvider: l.GetJudgeProvider(), JudgeModel: l.GetJudgeModel()},
		LabelVerdict: labelVerdict(l, criteria),
	}
}

// labelled is what run and conversation labels have in common.
type labelled interface {
	GetVerdictCorrect() bool
	GetCorrectedResult() string
	GetNote() string
	GetReviewerUserId() string
	GetReviewerEmail() string
	GetReviewerName() string
	GetLabelledAtUnixMs() int64
}

// labelVerdict is what a label says of the verdict it reviewed, and who
// said it.
func labelVerdict(l labelled, criteria []wire.CriterionLabel) wire.LabelVerdict {
	v := wire.LabelVerdict{VerdictCorrect: l.GetVerdictCorrect(), Overturned: !l.GetVerdictCorrect(), Criteria: criteria, Note: l.GetNote(),
		Reviewer:       wire.Reviewer{UserID: l.GetReviewerUserId(), Email: l.GetReviewerEmail(), Name: l.GetReviewerName()},
		LabelledAtUnix: l.GetLabelledAtUnixMs() / 1000}
	if c := l.GetCorrectedResult(); c != "" {
		v.CorrectedResult = &c
	}
	return v
}

// InvocationLabels answers the current label of each labelled run of an
// invocation, in run order.
func (h *Handlers) InvocationLabels(c *api.Call) (any, error) {
	inv, err := h.App.Invocation(c.Context(), c.Caller().WorkspaceID, c.ID())
	if err != nil {
		return nil, err
	}
	current, err := h.App.CurrentLabels(c.Context(), inv)
	if err != nil {
		return nil, err
	}
	labels := make([]*testingv1.RunLabel, 0, len(current))
	for _, l := range current {
		labels = append(labels, l)
	}
	sort.Slice(labels, func(i, j int) bool {
		a, _ := domain.RunIndex(inv.GetInvocationId(), labels[i].GetRunId())
		b, _ := domain.RunIndex(inv.GetInvocationId(), labels[j].GetRunId())
		return a < b
	})
	return map[string]any{"labels": mapEach(labels, LabelView)}, nil
}

// ReviewQueue answers a page of the runs to review.
func (h *Handlers) ReviewQueue(c *api.Call) (any, error) {
	q := struct {
		PageSize        int    `json:"page_size"`
		Cursor          string `json:"cursor"`
		AgentID         string `json:"agent_id"`
		SamplePerMille  *int   `json:"sample_per_mille"`
		IncludeLabelled bool   `json:"include_labelled"`
	}{PageSize: 30}
	if err := c.Query(&q); err != nil {
		return nil, err
	}
	rq := app.ReviewQuery{WorkspaceID: c.Caller().WorkspaceID, AgentID: q.AgentID, Limit: q.PageSize,
		SamplePerMille: app.ReviewSamplePerMille, IncludeLabelled: q.IncludeLabelled}
	if q.SamplePerMille != nil {
		rq.SamplePerMille = *q.SamplePerMille
	}
	page, err := h.App.ReviewQueue(c.Context(), rq, q.Cursor)
	if err != nil {
		return nil, err
	}
	return pageView("runs", page, reviewItemView), nil
}

// JudgeReport answers what the labels say of each judge model.
func (h *Handlers) JudgeReport(c *api.Call) (any, error) {
	var q struct {
		JudgeModel string `json:"judge_model"`
		TestID     string `json:"test_id"`
		SinceUnix  int64  `json:"since_unix"`
		Compare    string `json:"compare"`
	}
	if err := c.Query(&q); err != nil {
		return nil, err
	}
	var models []string
	if q.Compare != "" {
		for _, m := range strings.Split(q.Compare, ",") {
			if m = strings.TrimSpace(m); m != "" && !slices.Contains(models, m) {
				models = append(models, m)
			}
		}
		if len(models) < 2 || len(models) > app.MaxCompared {
			return nil, apperr.ValidationErrors{{Loc: []any{"query", "compare"}, Type: "value_error",
				Msg: fmt.Sprintf("Name 2 to %d different judge models, comma-separated", app.MaxCompared)}}
		}
	}
	rq := app.ReportQuery{WorkspaceID: c.Caller().WorkspaceID, JudgeModel: q.JudgeModel, TestID: q.TestID, SinceUnix: q.SinceUnix}
	rows, total, err := h.App.JudgeReport(c.Context(), rq)
	if err != nil {
		return nil, err
	}
	out := wire.JudgeReport{Labels: total, Judges: mapEach(rows, judgeView)}
	if models != nil {
		cmp, err := h.App.CompareJudges(c.Context(), rq, models)
		if err != nil {
			return nil, err
		}
		out.Compare = comparisonView(cmp)
	}
	return out, nil
}

func comparisonView(c *app.Comparison) *wire.Comparison {
	judges := make([]wire.ComparedJudge, len(c.Judges))
	for i, j := range c.Judges {
		judges[i] = wire.ComparedJudge{JudgeModel: j.JudgeModel, Judged: j.Judged, AgreementFigures: agreementView(j.Confusion)}
	}
	return &wire.Comparison{Models: c.Models, Runs: c.Runs, Judges: judges}
}

func voteResults(votes []*testingv1.JudgeVote) []string {
	out := make([]string, len(votes))
	for i, v := range votes {
		out[i] = v.GetResult()
	}
	return out
}

// LabelView is a run label as the API shows it.
func LabelView(l *testingv1.RunLabel) wire.RunLabel {
	criteria := make([]wire.CriterionLabel, len(l.GetCriteria()))
	for i, c := range l.GetCriteria() {
		criteria[i] = wire.CriterionLabel{ID: c.GetId(), Text: c.GetText(), Correct: c.GetCorrect()}
	}
	return wire.RunLabel{
		LabelID: l.GetLabelId(), InvocationID: l.GetInvocationId(), RunID: l.GetRunId(),
		TestID: l.GetTestId(), TestName: l.GetTestName(), Attempt: l.GetAttempt(),
		Reviewed: wire.RunReviewed{Status: l.GetRunStatus(), ConditionResult: l.GetJudgedResult(),
			JudgeProvider: l.GetJudgeProvider(), JudgeModel: l.GetJudgeModel(), JudgeVotes: voteResults(l.GetJudgeVotes())},
		LabelVerdict: labelVerdict(l, criteria),
	}
}

func reviewItemView(it app.ReviewItem) wire.ReviewItem {
	res := it.Result
	messages := res.GetRationaleMessages()
	if messages == nil {
		messages = []string{}
	}
	conds := it.Conditions
	if conds == nil {
		conds = []string{}
	}
	v := wire.ReviewItem{
		InvocationID: it.Invocation.GetInvocationId(), RunID: res.GetRunId(), AgentID: it.Invocation.GetAgentId(),
		TestID: it.Test.GetTestId(), TestName: it.Test.GetTestName(), TestType: it.Test.GetTestType(),
		Status: res.GetStatus(),
		ConditionResult: wire.ConditionResult{Result: res.GetConditionResult(),
			Rationale: wire.Rationale{Messages: messages, Summary: res.GetRationaleSummary()}},
		Reasons: it.Reasons, SuccessConditions: conds, AgentResponses: fullMessages(res.GetAgentResponsesJson()),
		JudgeModel: res.GetUsage().GetModel(), JudgeVotes: voteResults(res.GetJudgeVotes()),
		Error: res.GetError(), CreatedAtUnix: it.Invocation.GetCreatedAtUnix(),
	}
	if it.Label != nil {
		v.Label = new(LabelView(it.Label))
	}
	return v
}

// round4 keeps four decimals: a figure, not a float's noise.
func round4(f float64) float64 { return math.Round(f*10000) / 10000 }

func rateView(r domain.Rate) wire.JudgeRate {
	v := wire.JudgeRate{Count: r.Count, N: r.N}
	if r.N > 0 {
		v.Value, v.CI95 = new(round4(r.Value)), []float64{round4(r.Low), round4(r.High)}
	}
	return v
}

func kappaView(c domain.Confusion) *float64 {
	if k, ok := c.Kappa(); ok {
		return new(round4(k))
	}
	return nil
}

// agreementView is a judge's verdicts against people's labels.
func agreementView(c domain.Confusion) wire.AgreementFigures {
	return wire.AgreementFigures{
		Labels:    c.N(),
		Confusion: wire.Confusion{TruePass: c.TruePass, FalsePass: c.FalsePass, FalseFail: c.FalseFail, TrueFail: c.TrueFail},
		Agreement: rateView(c.AgreementRate()), CohensKappa: kappaView(c),
		TruePassRate: rateView(c.TruePassRate()), TrueFailRate: rateView(c.TrueFailRate()), FalsePassRate: rateView(c.FalsePassRate()),
	}
}

func judgeView(f *app.JudgeFigures) wire.JudgeFigures {
	v := wire.JudgeFigures{
		JudgeProvider: f.JudgeProvider, JudgeModel: f.JudgeModel, Scope: f.Scope(), UnknownVerdicts: f.Unknown,
		AgreementFigures: agreementView(f.Confusion),
		FlipRate:         rateView(domain.NewRate(f.Flipped, f.Pairs)), FlipRuns: f.FlipRuns,
		Criteria: make([]wire.CriterionFigures, len(f.Criteria)), Series: make([]wire.DayFigures, len(f.Series)),
	}
	v.Labels = f.Labels // the unknown verdicts too, which the confusion leaves out
	if f.TestID != "" {
		v.TestID, v.TestName = &f.TestID, &f.TestName
	}
	if f.AgentID != "" {
		v.AgentID = &f.AgentID
	}
	for i, c := range f.Criteria {
		v.Criteria[i] = wire.CriterionFigures{ID: c.ID, Text: c.Text, Labels: c.Labels,
			Agreement: rateView(domain.NewRate(c.Agreed, c.Labels)), CohensKappa: kappaView(c.Confusion)}
	}
	for i, d := range f.Series {
		v.Series[i] = wire.DayFigures{Date: d.Date, Labels: d.Confusion.N(), CohensKappa: kappaView(d.Confusion)}
		if d.Confusion.N() > 0 {
			v.Series[i].Agreement = new(round4(d.Confusion.Agreement()))
		}
	}
	return v
}
