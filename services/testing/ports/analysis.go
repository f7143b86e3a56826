package ports

import (
	"encoding/json"
	"fmt"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/wire"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
	"github.com/voiceai-platform/voiceai/services/testing/runner"
)

// recordedConversation is what the analysis reads of a conversation's
// GET: the document itself (answered back with the new analysis), its
// agent, transcript and the outcome its call stack reported.
type recordedConversation struct {
	doc        map[string]json.RawMessage
	agentID    string
	transcript []json.RawMessage
	reported   string
}

func (s *Simulator) recorded(c *api.Call, convID string) (recordedConversation, error) {
	raw, err := s.app.ConversationDocuments.Document(c.Context(), c.Caller(), convID)
	if err != nil {
		return recordedConversation{}, err
	}
	var rc recordedConversation
	var conv struct {
		AgentID    string            `json:"agent_id"`
		Transcript []json.RawMessage `json:"transcript"`
		Analysis   struct {
			CallSuccessful string  `json:"call_successful"`
			Reported       *string `json:"reported_call_successful"`
		} `json:"analysis"`
	}
	if err := json.Unmarshal(raw, &rc.doc); err != nil {
		return rc, fmt.Errorf("conversation %s: %w", convID, err)
	}
	if err := json.Unmarshal(raw, &conv); err != nil {
		return rc, fmt.Errorf("conversation %s: %w", convID, err)
	}
	rc.agentID, rc.transcript, rc.reported = conv.AgentID, conv.Transcript, conv.Analysis.CallSuccessful
	if conv.Analysis.Reported != nil {
		rc.reported = *conv.Analysis.Reported
	}
	return rc, nil
}

// RunConversationAnalysis judges a recorded conversation's evaluation
// criteria (the agent's platform_settings.evaluation.criteria of type
// prompt) again, with the current judge, against its transcript as it
// was recorded, and stores the analysis (testing.conversation_analysed):
// the tickets service then shows it on the conversation. The answer is
// the conversation as its GET shows it, the new analysis in it (the SDK
// parses a GetConversationResponseModel). An analysis whose judging
// stopped early (error) is answered but not stored, so a judge that is
// down never replaces a good analysis. Idempotency: each request without
// a key judges anew and stores a new analysis (the earlier ones stay in
// the log); a request repeating an Idempotency-Key answers the analysis
// first stored under it and judges nothing.
func (s *Simulator) RunConversationAnalysis(c *api.Call) (any, error) {
	if s.app.ConversationDocuments == nil {
		return nil, apperr.ServiceUnavailable
	}
	caller, convID := c.Caller(), c.ID()
	var first *testingv1.ConversationAnalysis
	if caller.CommandID != "" {
		var err error
		if first, _, err = s.app.AnalysisByCommand(c.Context(), caller.WorkspaceID, convID, caller.CommandID); err != nil {
			return nil, err
		}
	}
	rc, err := s.recorded(c, convID)
	if err != nil {
		return nil, err
	}
	if first != nil {
		return AnalysedConversation(rc.doc, rc.reported, first), nil
	}
	if len(rc.transcript) == 0 {
		return nil, apperr.ValidationErrors{{Loc: []any{"path", "conversation_id"}, Msg: "The conversation was recorded without a transcript: there is nothing to judge.", Type: "value_error"}}
	}
	agent, err := s.app.Agent(c.Context(), caller.WorkspaceID, rc.agentID)
	if err != nil {
		return nil, err
	}
	history := make([]domain.Message, 0, len(rc.transcript))
	for _, raw := range rc.transcript {
		var m domain.Message
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("conversation %s: a turn: %w", convID, err)
		}
		history = append(history, m)
	}
	run := runner.Run{
		Invocation: &testingv1.Invocation{InvocationId: "analysis", WorkspaceId: caller.WorkspaceID, AgentId: rc.agentID, RepeatCount: 1},
		Test:       &testingv1.PlannedTest{TestId: "analysis", TestName: "Conversation analysis", TestType: domain.TypeSimulation},
		Definition: domain.TestInput{ChatHistory: history}, RunID: "analysis",
	}
	criteria := agentCriteria(agent.GetPlatformSettingsJson(), nil)
	res := s.exec.JudgeRecorded(c.Context(), run, criteria)
	an := &testingv1.ConversationAnalysis{
		AnalysisId: app.NewAnalysisID(), WorkspaceId: caller.WorkspaceID, ConversationId: convID, AgentId: rc.agentID,
		CallSuccessful: runner.CallSuccessful(res.Criteria), TranscriptSummary: res.Summary, Error: res.Error,
		Judge: &testingv1.ModelUsage{Provider: res.Judge.Provider, Model: res.Judge.Model, PromptTokens: res.Judge.PromptTokens,
			CompletionTokens: res.Judge.CompletionTokens, TotalTokens: res.Judge.TotalTokens, ModelCalls: res.Judge.Calls, CachedModelCalls: res.Judge.Cached},
		RequestedByUserId: caller.UserID, AnalysedAtUnixMs: s.app.Now().UnixMilli(),
	}
	for i, cr := range res.Criteria {
		v := &testingv1.CriterionVerdict{Id: cr.ID, Result: cr.Result, Rationale: cr.Rationale}
		if i < len(criteria) && criteria[i].ID == cr.ID {
			v.Name, v.Goal = criteria[i].Name, criteria[i].Goal
		}
		an.Criteria = append(an.Criteria, v)
	}
	if res.Error != "" {
		an.CallSuccessful = domain.ConditionUnknown
		return AnalysedConversation(rc.doc, rc.reported, an), nil
	}
	stored, err := s.app.RecordAnalysis(c.Context(), caller, an)
	if err != nil {
		return nil, err
	}
	return AnalysedConversation(rc.doc, rc.reported, stored), nil
}

// AnalysedConversation is the conversation doc (as its GET answers it)
// with an in its analysis, as the GET shows it once the analysis is
// projected: the public analysis shape, the outcome its call stack
// reported (reported_call_successful) and the judge; and, beyond the
// public shape, the judge's usage (model_usage), analysis_id,
// analysed_at_unix_secs, stored, and error when the judging stopped.
func AnalysedConversation(doc map[string]json.RawMessage, reported string, an *testingv1.ConversationAnalysis) map[string]any {
	out := make(map[string]any, len(doc)+6)
	for k, v := range doc {
		out[k] = v
	}
	// What was collected stays as the GET shows it: a judge does not
	// collect data.
	var before wire.ConversationAnalysis
	_ = json.Unmarshal(doc["analysis"], &before)
	analysis := wire.ConversationAnalysis{CallSuccessful: an.GetCallSuccessful(), ReportedCallSuccessful: reported,
		TranscriptSummary: an.GetTranscriptSummary(), DataCollectionResults: before.DataCollectionResults,
		Judge: &wire.AnalysisJudge{AnalysisID: an.GetAnalysisId(), Provider: an.GetJudge().GetProvider(),
			Model: an.GetJudge().GetModel(), AnalysedAtUnix: an.GetAnalysedAtUnixMs() / 1000}}
	if analysis.DataCollectionResults == nil {
		analysis.DataCollectionResults = map[string]wire.DataCollected{}
	}
	results := make([]wire.CriterionVerdict, len(an.GetCriteria()))
	for i, c := range an.GetCriteria() {
		results[i] = wire.CriterionVerdict{ID: c.GetId(), Result: c.GetResult(), Rationale: c.GetRationale()}
	}
	analysis.SetCriteria(results...)
	out["analysis"] = analysis
	out["model_usage"], out["analysis_id"] = UsageView(an.GetJudge()), an.GetAnalysisId()
	out["analysed_at_unix_secs"], out["stored"] = an.GetAnalysedAtUnixMs()/1000, an.GetError() == ""
	if e := an.GetError(); e != "" {
		out["error"] = e
	}
	return out
}
