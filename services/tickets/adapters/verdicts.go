package adapters

import (
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	events "github.com/voiceai-platform/voiceai/proto-events"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/mongox"
	"github.com/voiceai-platform/voiceai/pkg/projection"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// The projections of the testing service's verdict events: each
// conversation's latest analysis, and the current label of each run and
// conversation. One document per conversation (or run), the newest event
// winning (projection.Upsert keeps the highest sequence).
const (
	AnalysesCollection = "conversation_analyses"
	AnalysesDurable    = "tickets-conversation-analyses"
	LabelsCollection   = "verdict_labels"
	LabelsDurable      = "tickets-verdict-labels"
)

// AnalysesFilter and LabelsFilter are what the two projectors read of
// stream TESTRUNS.
var (
	AnalysesFilter = []string{events.ConversationAnalysesAll}
	LabelsFilter   = []string{events.RunLabelsAll, events.ConversationLabelsAll}
)

// AnalysisDoc is a conversation's latest analysis.
type AnalysisDoc struct {
	WorkspaceID       string         `bson:"workspace_id"`
	ConversationID    string         `bson:"conversation_id"`
	AnalysisID        string         `bson:"analysis_id"`
	AgentID           string         `bson:"agent_id"`
	Criteria          []CriterionDoc `bson:"criteria"`
	CallSuccessful    string         `bson:"call_successful"`
	TranscriptSummary string         `bson:"transcript_summary"`
	JudgeProvider     string         `bson:"judge_provider"`
	JudgeModel        string         `bson:"judge_model"`
	AnalysedAtMs      int64          `bson:"analysed_at_ms"`
	// Deleted marks the tombstone of a deleted conversation's analysis.
	Deleted bool `bson:"deleted,omitempty"`
}

// CriterionDoc is one criterion of an analysis or of a label.
type CriterionDoc struct {
	ID           string `bson:"id"`
	Name         string `bson:"name,omitempty"`
	Result       string `bson:"result,omitempty"`
	Rationale    string `bson:"rationale,omitempty"`
	Correct      bool   `bson:"correct,omitempty"`
	JudgedResult string `bson:"judged_result,omitempty"`
}

// LabelDoc is the current label of a run or a conversation.
type LabelDoc struct {
	WorkspaceID     string         `bson:"workspace_id"`
	Kind            string         `bson:"kind"`
	InvocationID    string         `bson:"invocation_id,omitempty"`
	RunID           string         `bson:"run_id,omitempty"`
	ConversationID  string         `bson:"conversation_id,omitempty"`
	LabelID         string         `bson:"label_id"`
	TestName        string         `bson:"test_name,omitempty"`
	JudgeModel      string         `bson:"judge_model"`
	JudgedResult    string         `bson:"judged_result"`
	VerdictCorrect  bool           `bson:"verdict_correct"`
	CorrectedResult string         `bson:"corrected_result,omitempty"`
	Criteria        []CriterionDoc `bson:"criteria"`
	Note            string         `bson:"note"`
	ReviewerUserID  string         `bson:"reviewer_user_id"`
	ReviewerEmail   string         `bson:"reviewer_email"`
	ReviewerName    string         `bson:"reviewer_name"`
	LabelledAtMs    int64          `bson:"labelled_at_ms"`
	// Deleted marks the tombstone of a deleted conversation's label.
	Deleted bool `bson:"deleted,omitempty"`
}

func labelDocID(workspaceID string, k app.LabelKey) string {
	if k.Kind == app.LabelOfConversation {
		return workspaceID + "/conversation/" + k.ConversationID
	}
	return workspaceID + "/run/" + k.InvocationID + "/" + k.RunID
}

// AnalysisHandler projects testing.conversation_analysed, opening each
// analysis under its conversation's key (keys): a deleted conversation's
// no longer opens, and is skipped, as is one that does not open at all.
func AnalysisHandler(keys convseal.Keys) projection.Handler {
	return func(ctx context.Context, rec eventstore.Record) (string, any, error) {
		msg, err := esproto.Decode(rec)
		if err != nil {
			return "", nil, nil // not an event of ours to read: skipped
		}
		ev, ok := msg.(*testingv1.ConversationAnalysed)
		an := ev.GetAnalysis()
		if !ok || an.GetWorkspaceId() == "" || an.GetConversationId() == "" {
			return "", nil, nil
		}
		if sealed := ev.GetSealedAnalysis(); len(sealed) > 0 {
			full := &testingv1.ConversationAnalysis{}
			err := convseal.OpenMessage(ctx, keys, convseal.KindAnalysis, an.GetWorkspaceId(), an.GetConversationId(), sealed, full)
			switch {
			case errors.Is(err, convseal.ErrShredded), errors.Is(err, convseal.ErrNoKey), errors.Is(err, convseal.ErrTampered):
				return "", nil, nil
			case err != nil:
				return "", nil, err // the keys are out of reach: tried again
			}
			an = full
		}
		return analysisDoc(an)
	}
}

// analysisDoc is the document of a conversation's analysis, under its id.
func analysisDoc(an *testingv1.ConversationAnalysis) (string, any, error) {
	doc := AnalysisDoc{
		WorkspaceID: an.GetWorkspaceId(), ConversationID: an.GetConversationId(), AnalysisID: an.GetAnalysisId(), AgentID: an.GetAgentId(),
		CallSuccessful: an.GetCallSuccessful(), TranscriptSummary: an.GetTranscriptSummary(),
		JudgeProvider: an.GetJudge().GetProvider(), JudgeModel: an.GetJudge().GetModel(), AnalysedAtMs: an.GetAnalysedAtUnixMs(),
		Criteria: []CriterionDoc{},
	}
	for _, c := range an.GetCriteria() {
		doc.Criteria = append(doc.Criteria, CriterionDoc{ID: c.GetId(), Name: c.GetName(), Result: c.GetResult(), Rationale: c.GetRationale()})
	}
	return an.GetWorkspaceId() + "/" + an.GetConversationId(), doc, nil
}

// LabelHandler projects testing.run_labelled and
// testing.conversation_labelled, opening a conversation label's sealed
// note under the conversation's key (keys): a label whose note no longer
// opens (the conversation deleted) is skipped.
func LabelHandler(keys convseal.Keys) projection.Handler {
	return func(ctx context.Context, rec eventstore.Record) (string, any, error) {
		msg, err := esproto.Decode(rec)
		if err != nil {
			return "", nil, nil
		}
		var doc LabelDoc
		var criteria []*testingv1.CriterionLabel
		switch ev := msg.(type) {
		case *testingv1.RunLabelled:
			l := ev.GetLabel()
			doc = LabelDoc{WorkspaceID: l.GetWorkspaceId(), Kind: app.LabelOfRun, InvocationID: l.GetInvocationId(), RunID: l.GetRunId(),
				LabelID: l.GetLabelId(), TestName: l.GetTestName(), JudgeModel: l.GetJudgeModel(), JudgedResult: l.GetJudgedResult(),
				VerdictCorrect: l.GetVerdictCorrect(), CorrectedResult: l.GetCorrectedResult(), Note: l.GetNote(),
				ReviewerUserID: l.GetReviewerUserId(), ReviewerEmail: l.GetReviewerEmail(), ReviewerName: l.GetReviewerName(), LabelledAtMs: l.GetLabelledAtUnixMs()}
			criteria = l.GetCriteria()
		case *testingv1.ConversationLabelled:
			l := ev.GetLabel()
			doc = LabelDoc{WorkspaceID: l.GetWorkspaceId(), Kind: app.LabelOfConversation, ConversationID: l.GetConversationId(),
				LabelID: l.GetLabelId(), JudgeModel: l.GetJudgeModel(), JudgedResult: l.GetJudgedResult(),
				VerdictCorrect: l.GetVerdictCorrect(), CorrectedResult: l.GetCorrectedResult(), Note: l.GetNote(),
				ReviewerUserID: l.GetReviewerUserId(), ReviewerEmail: l.GetReviewerEmail(), ReviewerName: l.GetReviewerName(), LabelledAtMs: l.GetLabelledAtUnixMs()}
			criteria = l.GetCriteria()
			if sealed := ev.GetSealedNote(); len(sealed) > 0 {
				note, err := convseal.OpenAs(ctx, keys, convseal.KindLabelNote, l.GetWorkspaceId(), l.GetConversationId(), sealed)
				switch {
				case errors.Is(err, convseal.ErrShredded), errors.Is(err, convseal.ErrNoKey), errors.Is(err, convseal.ErrTampered):
					return "", nil, nil
				case err != nil:
					return "", nil, err // the keys are out of reach: tried again
				}
				doc.Note = string(note)
			}
		default:
			return "", nil, nil
		}
		if doc.WorkspaceID == "" {
			return "", nil, nil
		}
		doc.Criteria = []CriterionDoc{}
		for _, c := range criteria {
			doc.Criteria = append(doc.Criteria, CriterionDoc{ID: c.GetId(), Name: c.GetText(), Correct: c.GetCorrect(), JudgedResult: c.GetJudgedResult()})
		}
		key := app.LabelKey{Kind: doc.Kind, InvocationID: doc.InvocationID, RunID: doc.RunID, ConversationID: doc.ConversationID}
		return labelDocID(doc.WorkspaceID, key), doc, nil
	}
}

// Verdicts reads the two projections.
type Verdicts struct {
	AnalysesColl, LabelsColl *mongo.Collection
	// LabelsLookup is how labels are asked for (mongox.ByIDs): each by
	// id on the embedded store, where one query for several reads every
	// label.
	LabelsLookup mongox.Lookup
}

// OpenVerdicts opens the collections.
func OpenVerdicts(db *mongo.Database) Verdicts {
	return Verdicts{AnalysesColl: db.Collection(AnalysesCollection), LabelsColl: db.Collection(LabelsCollection)}
}

// Analysis is the conversation's latest analysis, nil when it has none.
func (v Verdicts) Analysis(ctx context.Context, workspaceID, conversationID string) (*app.Analysis, error) {
	var doc AnalysisDoc
	err := v.AnalysesColl.FindOne(ctx, bson.D{{Key: "_id", Value: workspaceID + "/" + conversationID}}).Decode(&doc)
	if errors.Is(err, mongo.ErrNoDocuments) || err == nil && doc.Deleted {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	an := &app.Analysis{AnalysisID: doc.AnalysisID, AgentID: doc.AgentID, CallSuccessful: doc.CallSuccessful,
		TranscriptSummary: doc.TranscriptSummary, JudgeProvider: doc.JudgeProvider, JudgeModel: doc.JudgeModel, AnalysedAtMs: doc.AnalysedAtMs}
	for _, c := range doc.Criteria {
		an.Criteria = append(an.Criteria, app.CriterionVerdict{ID: c.ID, Name: c.Name, Result: c.Result, Rationale: c.Rationale})
	}
	return an, nil
}

// Labels are the current labels of what keys name, in keys' order.
func (v Verdicts) Labels(ctx context.Context, workspaceID string, keys []app.LabelKey) ([]app.VerdictLabel, error) {
	idsOf := make([]string, len(keys))
	for i, k := range keys {
		idsOf[i] = labelDocID(workspaceID, k)
	}
	docs, err := mongox.ByIDs[struct {
		ID       string `bson:"_id"`
		LabelDoc `bson:",inline"`
	}](ctx, v.LabelsColl, idsOf, v.LabelsLookup)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]LabelDoc, len(docs))
	for _, d := range docs {
		byID[d.ID] = d.LabelDoc
	}
	out := []app.VerdictLabel{}
	for _, id := range idsOf {
		d, ok := byID[id]
		if !ok || d.Deleted {
			continue
		}
		l := app.VerdictLabel{Kind: d.Kind, InvocationID: d.InvocationID, RunID: d.RunID, ConversationID: d.ConversationID,
			LabelID: d.LabelID, TestName: d.TestName, JudgeModel: d.JudgeModel, JudgedResult: d.JudgedResult,
			VerdictCorrect: d.VerdictCorrect, CorrectedResult: d.CorrectedResult, Note: d.Note,
			Reviewer: app.Reviewer{UserID: d.ReviewerUserID, Email: d.ReviewerEmail, Name: d.ReviewerName}, LabelledAtMs: d.LabelledAtMs}
		for _, c := range d.Criteria {
			l.Criteria = append(l.Criteria, app.CriterionLabel{ID: c.ID, Text: c.Name, JudgedResult: c.JudgedResult, Correct: c.Correct})
		}
		out = append(out, l)
	}
	return out, nil
}
