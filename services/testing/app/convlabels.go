package app

import (
	"context"
	"fmt"

	events "github.com/voiceai-platform/voiceai/proto-events"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/ids"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

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
		return first.GetLabel(), err
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
	stored, err := storeOnce(ctx, a, c, subject, label.GetLabelId(), meta, &testingv1.ConversationLabelled{Meta: meta, Label: label})
	return stored.GetLabel(), err
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
		out = append(out, ev.GetLabel())
		return nil
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
// analyses and labels stay in the runs log, but it is gone for its labels'
// reads and writes and for the judge report.
func (a *App) deletedConversation(ws, conversationID string) bool {
	return a.ConversationDeleted != nil && a.ConversationDeleted(ws, conversationID)
}

// conversationLabelOf is the label a conversation_labelled record holds.
func conversationLabelOf(rec Record) (*testingv1.ConversationLabel, error) {
	ev, err := decodeAs[*testingv1.ConversationLabelled](rec)
	return ev.GetLabel(), err
}
