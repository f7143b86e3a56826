package app

import (
	"context"

	events "github.com/voiceai-platform/voiceai/proto-events"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/ids"
	"github.com/voiceai-platform/voiceai/pkg/principal"
)

// NewAnalysisID is the id of a new conversation analysis.
func NewAnalysisID() string { return ids.New("cana") }

// RecordAnalysis stores a conversation's re-judged analysis as a
// testing.conversation_analysed event: every analysis is kept, the last is
// the conversation's current one. Under an Idempotency-Key the first
// analysis stored with it is answered instead (a retry that raced the
// caller's look-up, AnalysisByCommand, lands here).
func (a *App) RecordAnalysis(ctx context.Context, c principal.Caller, an *testingv1.ConversationAnalysis) (*testingv1.ConversationAnalysis, error) {
	subject, err := events.ConversationAnalysisSubject(c.WorkspaceID, an.GetConversationId())
	if err != nil {
		return nil, apperr.ConversationUnknown
	}
	meta := esproto.Meta(ctx, c.WorkspaceID, c.CommandID, a.Now())
	stored, err := storeOnce(ctx, a, c, subject, an.GetAnalysisId(), meta, &testingv1.ConversationAnalysed{Meta: meta, Analysis: an})
	return stored.GetAnalysis(), err
}

// AnalysisByCommand is the analysis commandID stored for a conversation,
// if any.
func (a *App) AnalysisByCommand(ctx context.Context, ws, conversationID, commandID string) (*testingv1.ConversationAnalysis, bool, error) {
	subject, err := events.ConversationAnalysisSubject(ws, conversationID)
	if err != nil {
		return nil, false, nil
	}
	ev, found, err := storedByCommand[*testingv1.ConversationAnalysed](ctx, a, ws, subject, commandID)
	return ev.GetAnalysis(), found, err
}

// CurrentAnalysis is a conversation's last stored analysis and its
// sequence in the runs log; found is false when it has none.
func (a *App) CurrentAnalysis(ctx context.Context, ws, conversationID string) (an *testingv1.ConversationAnalysis, seq uint64, found bool, err error) {
	subject, err := events.ConversationAnalysisSubject(ws, conversationID)
	if err != nil {
		return nil, 0, false, nil
	}
	rec, found, err := a.Runs.Last(ctx, subject)
	if err != nil || !found {
		return nil, 0, false, err
	}
	an, err = analysisOf(rec)
	return an, rec.Seq, err == nil, err
}

func analysisOf(rec Record) (*testingv1.ConversationAnalysis, error) {
	ev, err := decodeAs[*testingv1.ConversationAnalysed](rec)
	return ev.GetAnalysis(), err
}
