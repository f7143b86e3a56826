package app

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/ids"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// CriterionLabelInput is one criterion of a label's body.
type CriterionLabelInput struct {
	ID      string `json:"id"`
	Correct *bool  `json:"correct"`
}

// LabelInput is the body of POST …/runs/{run_id}/labels. Its shape
// (verdict_correct a required boolean, each criterion's id and correct,
// the note's length) is the API schema's (RunLabelCreate), checked at the
// edge.
type LabelInput struct {
	VerdictCorrect *bool                 `json:"verdict_correct"`
	Criteria       []CriterionLabelInput `json:"criteria"`
	Note           string                `json:"note"`
}

// CriterionID is the id of a test's i-th success condition (its
// success_condition first, then its success_conditions) in a label.
func CriterionID(i int) string { return criterionPrefix + strconv.Itoa(i) }

const criterionPrefix = "condition_"

// criterionIndex reads a CriterionID back: the index of one of n
// conditions, written as CriterionID writes it.
func criterionIndex(id string, n int) (int, bool) {
	digits, ok := strings.CutPrefix(id, criterionPrefix)
	i, err := strconv.Atoi(digits)
	return i, ok && err == nil && CriterionID(i) == id && i >= 0 && i < n
}

// Conditions are a test's success conditions as the judge gets them.
func Conditions(def domain.TestInput) []string {
	var out []string
	if c := def.SuccessCondition; c != nil && *c != "" {
		out = append(out, *c)
	}
	return append(out, def.SuccessConditions...)
}

// labelledRun is a run a label may name: its invocation, planned test and
// current result (with the result's sequence).
type labelledRun struct {
	inv     *testingv1.Invocation
	test    *testingv1.PlannedTest
	result  *testingv1.RunResult
	seq     uint64
	subject string
}

// run finds a run of an invocation of the workspace and its current
// result (nil when it has none).
func (a *App) run(ctx context.Context, ws, invocationID, runID string) (labelledRun, error) {
	inv, err := a.Invocation(ctx, ws, invocationID)
	if err != nil {
		return labelledRun{}, err
	}
	idx, err := domain.RunIndex(invocationID, runID)
	repeat := int(max(inv.GetRepeatCount(), 1))
	if err != nil || idx >= len(inv.GetTests())*repeat {
		return labelledRun{}, apperr.TestRunNotFound
	}
	lr := labelledRun{inv: inv, test: inv.GetTests()[idx/repeat]}
	subject, err := events.RunSubject(ws, invocationID, runID)
	if err != nil {
		return labelledRun{}, apperr.TestRunNotFound
	}
	rec, found, err := a.Runs.Last(ctx, subject)
	if err != nil || !found {
		return lr, err
	}
	if lr.result, err = runOf(esproto.Decode(rec)); err != nil {
		return lr, err
	}
	lr.seq = rec.Seq
	if lr.subject, err = events.RunLabelSubject(ws, invocationID, runID); err != nil {
		return lr, apperr.TestRunNotFound
	}
	return lr, nil
}

// LabelRun records a reviewer's label of a run's verdict: right or wrong,
// each criterion's too, and a note. The label names the result it
// reviewed and who labelled it when; the run's own result is never
// changed, and a later label supersedes this one without erasing it. A
// retried request with the same Idempotency-Key answers the first label.
func (a *App) LabelRun(ctx context.Context, c principal.Caller, invocationID, runID string, in LabelInput) (*testingv1.RunLabel, error) {
	lr, err := a.run(ctx, c.WorkspaceID, invocationID, runID)
	if err != nil {
		return nil, err
	}
	if lr.result == nil {
		return nil, apperr.RunNotFinished
	}
	if first, found, err := storedBefore[*testingv1.RunLabelled](ctx, a, c, lr.subject); err != nil || found {
		return first.GetLabel(), err
	}
	def, err := a.DefinitionAt(ctx, lr.test.GetTestStreamSeq())
	if err != nil {
		return nil, err
	}
	conds := Conditions(def)
	criteria, err := criterionLabels(in.Criteria, func(id string) (*testingv1.CriterionLabel, string) {
		idx, ok := criterionIndex(id, len(conds))
		switch {
		case !ok && len(conds) == 0:
			return nil, "The run's test has no success conditions: label its verdict alone"
		case !ok:
			return nil, fmt.Sprintf("The run's test has %d success condition(s): criteria are %s … %s", len(conds), CriterionID(0), CriterionID(len(conds)-1))
		}
		return &testingv1.CriterionLabel{Text: conds[idx]}, ""
	})
	if err != nil {
		return nil, err
	}
	res := lr.result
	now := a.Now()
	judgeProvider, judgeModel := res.GetUsage().GetProvider(), res.GetUsage().GetModel()
	if lr.test.GetTestType() == domain.TypeTool {
		// Its calls are checked against its expectation, not judged: the
		// label measures no judge model, and the report counts it for none.
		judgeProvider, judgeModel = "", ""
	}
	label := &testingv1.RunLabel{
		LabelId: ids.New("rlbl"), WorkspaceId: c.WorkspaceID, InvocationId: invocationID, RunId: runID,
		TestId: lr.test.GetTestId(), TestName: lr.test.GetTestName(), TestType: lr.test.GetTestType(),
		Attempt: res.GetAttempt(), ResultSeq: lr.seq, RunStatus: res.GetStatus(), JudgedResult: res.GetConditionResult(),
		JudgeProvider: judgeProvider, JudgeModel: judgeModel, JudgeVotes: res.GetJudgeVotes(),
		VerdictCorrect: in.VerdictCorrect != nil && *in.VerdictCorrect, Criteria: criteria, Note: in.Note,
		ReviewerUserId: c.UserID, ReviewerEmail: c.Email, ReviewerName: c.Name, ReviewerKeyId: c.KeyID,
		LabelledAtUnixMs: now.UnixMilli(),
	}
	if !label.VerdictCorrect {
		label.CorrectedResult = overturned(label.JudgedResult)
	}
	meta := esproto.Meta(ctx, c.WorkspaceID, c.CommandID, now)
	stored, err := storeOnce(ctx, a, c, lr.subject, label.GetLabelId(), meta, &testingv1.RunLabelled{Meta: meta, Label: label})
	return stored.GetLabel(), err
}

// criterionLabels checks a label's criteria and makes them, for a run's
// label and a conversation's alike: judged answers what an id labels (its
// text and judged result), or why no criterion has it; an unknown id and
// one labelled twice are each a 422 at body.criteria[i].id.
func criterionLabels(in []CriterionLabelInput, judged func(id string) (*testingv1.CriterionLabel, string)) ([]*testingv1.CriterionLabel, error) {
	var v apperr.Validator
	seen := map[string]bool{}
	var criteria []*testingv1.CriterionLabel
	for i, cr := range in {
		label, unknown := judged(cr.ID)
		switch {
		case unknown != "":
			v.Add(unknown, "value_error", "body", "criteria", i, "id")
		case seen[cr.ID]:
			v.Add("Criterion "+cr.ID+" is labelled twice", "value_error", "body", "criteria", i, "id")
		default:
			seen[cr.ID] = true
			label.Id, label.Correct = cr.ID, cr.Correct != nil && *cr.Correct
			criteria = append(criteria, label)
		}
	}
	return criteria, v.Err()
}

// labelOf is the label a run_labelled record holds.
func labelOf(rec Record) (*testingv1.RunLabel, error) {
	ev, err := decodeAs[*testingv1.RunLabelled](rec)
	return ev.GetLabel(), err
}

// RunLabels are every label of a run, oldest first (the last is current).
func (a *App) RunLabels(ctx context.Context, ws, invocationID, runID string) ([]*testingv1.RunLabel, error) {
	lr, err := a.run(ctx, ws, invocationID, runID)
	if err != nil || lr.subject == "" {
		return []*testingv1.RunLabel{}, err
	}
	out := []*testingv1.RunLabel{}
	err = eachStored(ctx, a, ws, lr.subject, func(_ Record, ev *testingv1.RunLabelled) error {
		out = append(out, ev.GetLabel())
		return nil
	})
	return out, err
}

// Reviews reports whether label reviewed res, the result a run shows: a
// label reviews one attempt of its run (a result is stored once per run
// and attempt), and a run resubmitted since was judged anew, a verdict
// nobody has reviewed yet.
func Reviews(label *testingv1.RunLabel, res *testingv1.RunResult) bool {
	return label != nil && res != nil && label.GetAttempt() == res.GetAttempt()
}

// CurrentLabels are the current label of each labelled run of an
// invocation, by run id, whichever attempt of the run it reviewed.
func (a *App) CurrentLabels(ctx context.Context, inv *testingv1.Invocation) (map[string]*testingv1.RunLabel, error) {
	filter, err := events.RunLabelsOfInvocation(inv.GetWorkspaceId(), inv.GetInvocationId())
	if err != nil {
		return nil, err
	}
	out := map[string]*testingv1.RunLabel{}
	err = a.scan(ctx, inv.GetWorkspaceId(), filter, a.Runs.EachLast, func(rec Record) error {
		l, err := labelOf(rec)
		if err == nil {
			out[l.GetRunId()] = l
		}
		return err
	})
	return out, err
}

// A conversation is labelled as a run is: the same body, criteria and
// overturned verdict, kept on the runs log beside its analyses.

// LabelConversation records a reviewer's label of a conversation's
// current analysis (its verdict, call_successful, and each criterion's),
// as a run's verdict is labelled: the label names the analysis it
// reviewed and its judge, never changes it, and a later label supersedes
// it without erasing it. A retried request with the same Idempotency-Key
// answers the first label.
func (a *App) LabelConversation(ctx context.Context, c principal.Caller, conversationID string, in LabelInput) (*testingv1.ConversationLabel, error) {
	subject, err := events.ConversationLabelSubject(c.WorkspaceID, conversationID)
	if err != nil || a.deletedConversation(c.WorkspaceID, conversationID) {
		return nil, apperr.ConversationUnknown
	}
	if first, found, err := storedBefore[*testingv1.ConversationLabelled](ctx, a, c, subject); err != nil || found {
		if err != nil {
			return nil, err
		}
		return a.openLabel(ctx, first)
	}
	an, seq, found, err := a.CurrentAnalysis(ctx, c.WorkspaceID, conversationID)
	if err != nil {
		return nil, err
	}
	if !found {
		// No analysis: an unknown conversation, or one never analysed.
		if a.Conversations != nil {
			if _, _, err := a.Conversations.Conversation(ctx, c, conversationID); err != nil {
				return nil, err
			}
		}
		return nil, apperr.ConversationNotAnalysed
	}
	verdicts := map[string]*testingv1.CriterionVerdict{}
	for _, cr := range an.GetCriteria() {
		verdicts[cr.GetId()] = cr
	}
	criteria, err := criterionLabels(in.Criteria, func(id string) (*testingv1.CriterionLabel, string) {
		judged, ok := verdicts[id]
		if !ok {
			return nil, fmt.Sprintf("The conversation's analysis has no criterion %q: label one of the criteria it judged", id)
		}
		text := judged.GetName()
		if text == "" {
			text = judged.GetGoal()
		}
		return &testingv1.CriterionLabel{Text: text, JudgedResult: judged.GetResult()}, ""
	})
	if err != nil {
		return nil, err
	}
	now := a.Now()
	label := &testingv1.ConversationLabel{
		LabelId: ids.New("clbl"), WorkspaceId: c.WorkspaceID, ConversationId: conversationID, AgentId: an.GetAgentId(),
		AnalysisId: an.GetAnalysisId(), AnalysisSeq: seq, JudgedResult: an.GetCallSuccessful(),
		JudgeProvider: an.GetJudge().GetProvider(), JudgeModel: an.GetJudge().GetModel(),
		VerdictCorrect: in.VerdictCorrect != nil && *in.VerdictCorrect, Criteria: criteria, Note: in.Note,
		ReviewerUserId: c.UserID, ReviewerEmail: c.Email, ReviewerName: c.Name, ReviewerKeyId: c.KeyID,
		LabelledAtUnixMs: now.UnixMilli(),
	}
	if !label.VerdictCorrect {
		label.CorrectedResult = overturned(label.JudgedResult)
	}
	meta := esproto.Meta(ctx, c.WorkspaceID, c.CommandID, now)
	ev, err := a.sealLabel(ctx, meta, label)
	if err != nil {
		return nil, err
	}
	return storeSealed(ctx, a, c, subject, label.GetLabelId(), meta, ev, label, a.openLabel)
}

// sealLabel is the event that records label, its note (a reviewer's
// words about the conversation) sealed under the conversation's key like
// its analyses; the verdicts stay in the clear for the judge report.
func (a *App) sealLabel(ctx context.Context, meta *commonv1.EventMeta, label *testingv1.ConversationLabel) (*testingv1.ConversationLabelled, error) {
	if label.GetNote() == "" {
		return &testingv1.ConversationLabelled{Meta: meta, Label: label}, nil
	}
	if a.ConversationKeys == nil {
		return nil, fmt.Errorf("no conversation keys to seal label %s: %w", label.GetLabelId(), apperr.ServiceUnavailable)
	}
	sealed, err := convseal.SealAs(ctx, a.ConversationKeys, convseal.KindLabelNote, label.GetWorkspaceId(), label.GetConversationId(), []byte(label.GetNote()))
	if errors.Is(err, convseal.ErrShredded) {
		return nil, apperr.ConversationUnknown
	}
	if err != nil {
		return nil, err
	}
	inClear := proto.CloneOf(label)
	inClear.Note = ""
	return &testingv1.ConversationLabelled{Meta: meta, Label: inClear, SealedNote: sealed}, nil
}

// openLabel is the label ev records, its note opened where it is sealed;
// once the conversation was deleted it is not found.
func (a *App) openLabel(ctx context.Context, ev *testingv1.ConversationLabelled) (*testingv1.ConversationLabel, error) {
	label := ev.GetLabel()
	if len(ev.GetSealedNote()) == 0 {
		return label, nil
	}
	if a.ConversationKeys == nil {
		return nil, fmt.Errorf("no conversation keys to open label %s: %w", label.GetLabelId(), apperr.ServiceUnavailable)
	}
	note, err := convseal.OpenAs(ctx, a.ConversationKeys, convseal.KindLabelNote, label.GetWorkspaceId(), label.GetConversationId(), ev.GetSealedNote())
	switch {
	case errors.Is(err, convseal.ErrShredded):
		return nil, apperr.ConversationUnknown
	case err != nil:
		return nil, fmt.Errorf("label %s of conversation %s: %w", label.GetLabelId(), label.GetConversationId(), err)
	}
	opened := proto.CloneOf(label)
	opened.Note = string(note)
	return opened, nil
}

// overturned is the result a label that says judged was wrong makes right:
// the other verdict, or "" for an unknown one.
func overturned(judged string) string {
	switch judged {
	case domain.ConditionSuccess:
		return domain.ConditionFailure
	case domain.ConditionFailure:
		return domain.ConditionSuccess
	}
	return ""
}

// ConversationLabels are every label of a conversation, oldest first (the
// last is current).
func (a *App) ConversationLabels(ctx context.Context, c principal.Caller, conversationID string) ([]*testingv1.ConversationLabel, error) {
	subject, err := events.ConversationLabelSubject(c.WorkspaceID, conversationID)
	if err != nil || a.deletedConversation(c.WorkspaceID, conversationID) {
		return nil, apperr.ConversationUnknown
	}
	out := []*testingv1.ConversationLabel{}
	err = eachStored(ctx, a, c.WorkspaceID, subject, func(_ Record, ev *testingv1.ConversationLabelled) error {
		l, err := a.openLabel(ctx, ev)
		out = append(out, l)
		return err
	})
	if err != nil || len(out) > 0 {
		return out, err
	}
	// No label: an unknown conversation is a 404, a known one an empty list.
	if _, _, found, err := a.CurrentAnalysis(ctx, c.WorkspaceID, conversationID); err != nil || found {
		return out, err
	}
	if a.Conversations != nil {
		if _, _, err := a.Conversations.Conversation(ctx, c, conversationID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// deletedConversation reports whether the conversation was deleted: its
// analyses and labels' notes no longer open (their key is destroyed), and
// it is gone for its labels' reads and writes. The judge report still
// counts its labels' verdicts, which are in the clear.
func (a *App) deletedConversation(ws, conversationID string) bool {
	return a.ConversationDeleted != nil && a.ConversationDeleted(ws, conversationID)
}

// conversationLabelOf is the label a conversation_labelled record holds.
func conversationLabelOf(rec Record) (*testingv1.ConversationLabel, error) {
	ev, err := decodeAs[*testingv1.ConversationLabelled](rec)
	return ev.GetLabel(), err
}
