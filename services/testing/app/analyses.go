package app

import (
	"context"
	"errors"
	"fmt"

	events "github.com/voiceai-platform/voiceai/proto-events"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/ids"
	"github.com/voiceai-platform/voiceai/pkg/principal"
)

// NewAnalysisID is the id of a new conversation analysis.
func NewAnalysisID() string { return ids.New("cana") }

// RecordAnalysis stores a conversation's re-judged analysis as a
// testing.conversation_analysed event, sealed under the conversation's
// key (it holds what the conversation said): every analysis is kept, the
// last is the conversation's current one. Under an Idempotency-Key the
// first analysis stored with it is answered instead (a retry that raced
// the caller's look-up, AnalysisByCommand, lands here). A conversation
// deleted meanwhile is not found: nothing more is recorded of it.
func (a *App) RecordAnalysis(ctx context.Context, c principal.Caller, an *testingv1.ConversationAnalysis) (*testingv1.ConversationAnalysis, error) {
	subject, err := events.ConversationAnalysisSubject(c.WorkspaceID, an.GetConversationId())
	if err != nil {
		return nil, apperr.ConversationUnknown
	}
	if an.GetWorkspaceId() != c.WorkspaceID {
		// The key it is sealed under is its workspace's conversation's: it
		// must be the caller's, whose subject it goes on.
		return nil, fmt.Errorf("analysis %s of workspace %q recorded for %q", an.GetAnalysisId(), an.GetWorkspaceId(), c.WorkspaceID)
	}
	meta := esproto.Meta(ctx, c.WorkspaceID, c.CommandID, a.Now())
	ev, err := a.sealAnalysis(ctx, meta, an)
	if err != nil {
		return nil, err
	}
	return storeSealed(ctx, a, c, subject, an.GetAnalysisId(), meta, ev, an, func(ctx context.Context, stored *testingv1.ConversationAnalysed) (*testingv1.ConversationAnalysis, error) {
		first, found, err := a.openAnalysis(ctx, stored)
		if err == nil && !found {
			err = apperr.ConversationUnknown
		}
		return first, err
	})
}

// AnalysisByCommand is the analysis commandID stored for a conversation,
// if any.
func (a *App) AnalysisByCommand(ctx context.Context, ws, conversationID, commandID string) (*testingv1.ConversationAnalysis, bool, error) {
	subject, err := events.ConversationAnalysisSubject(ws, conversationID)
	if err != nil {
		return nil, false, nil
	}
	ev, found, err := storedByCommand[*testingv1.ConversationAnalysed](ctx, a, ws, subject, commandID)
	if err != nil || !found {
		return nil, false, err
	}
	return a.openAnalysis(ctx, ev)
}

// CurrentAnalysis is a conversation's last stored analysis and its
// sequence in the runs log; found is false when it has none, or when the
// conversation was deleted (its analyses no longer open).
func (a *App) CurrentAnalysis(ctx context.Context, ws, conversationID string) (an *testingv1.ConversationAnalysis, seq uint64, found bool, err error) {
	subject, err := events.ConversationAnalysisSubject(ws, conversationID)
	if err != nil {
		return nil, 0, false, nil
	}
	rec, found, err := a.Runs.Last(ctx, subject)
	if err != nil || !found {
		return nil, 0, false, err
	}
	ev, err := decodeAs[*testingv1.ConversationAnalysed](rec)
	if err != nil {
		return nil, 0, false, err
	}
	an, found, err = a.openAnalysis(ctx, ev)
	return an, rec.Seq, found, err
}

// sealAnalysis is the event that records an: the whole analysis sealed
// under its conversation's key, only its ids and time in the clear, so
// that deleting the conversation makes it unreadable in the runs log as
// it does the transcript.
func (a *App) sealAnalysis(ctx context.Context, meta *commonv1.EventMeta, an *testingv1.ConversationAnalysis) (*testingv1.ConversationAnalysed, error) {
	if a.ConversationKeys == nil {
		return nil, fmt.Errorf("no conversation keys to seal analysis %s: %w", an.GetAnalysisId(), apperr.ServiceUnavailable)
	}
	sealed, err := convseal.SealMessage(ctx, a.ConversationKeys, convseal.KindAnalysis, an.GetWorkspaceId(), an.GetConversationId(), an)
	if errors.Is(err, convseal.ErrShredded) {
		return nil, apperr.ConversationUnknown
	}
	if err != nil {
		return nil, err
	}
	inClear := &testingv1.ConversationAnalysis{AnalysisId: an.GetAnalysisId(), WorkspaceId: an.GetWorkspaceId(),
		ConversationId: an.GetConversationId(), AgentId: an.GetAgentId(), AnalysedAtUnixMs: an.GetAnalysedAtUnixMs()}
	return &testingv1.ConversationAnalysed{Meta: meta, Analysis: inClear, SealedAnalysis: sealed}, nil
}

// openAnalysis is the analysis ev records, opened where it is sealed;
// found is false once its conversation was deleted (its key destroyed).
func (a *App) openAnalysis(ctx context.Context, ev *testingv1.ConversationAnalysed) (*testingv1.ConversationAnalysis, bool, error) {
	inClear := ev.GetAnalysis()
	if len(ev.GetSealedAnalysis()) == 0 {
		return inClear, true, nil // recorded before analyses were sealed
	}
	if a.ConversationKeys == nil {
		return nil, false, fmt.Errorf("no conversation keys to open analysis %s: %w", inClear.GetAnalysisId(), apperr.ServiceUnavailable)
	}
	an := &testingv1.ConversationAnalysis{}
	err := convseal.OpenMessage(ctx, a.ConversationKeys, convseal.KindAnalysis, inClear.GetWorkspaceId(), inClear.GetConversationId(), ev.GetSealedAnalysis(), an)
	switch {
	case errors.Is(err, convseal.ErrShredded):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("analysis %s of conversation %s: %w", inClear.GetAnalysisId(), inClear.GetConversationId(), err)
	}
	return an, true, nil
}
