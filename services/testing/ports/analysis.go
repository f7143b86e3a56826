package ports

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gorilla/mux"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
	"github.com/voiceai-platform/voiceai/services/testing/runner"
)

// RunConversationAnalysis judges a recorded conversation's evaluation
// criteria (the agent's platform_settings.evaluation.criteria of type
// prompt) again, with the current judge, against its transcript as it
// was recorded, and stores the analysis (testing.conversation_analysed):
// the tickets service then shows it on the conversation. An analysis whose
// judging stopped early (error) is answered but not stored, so a judge
// that is down never replaces a good analysis. Idempotency: each request
// without a key judges anew and stores a new analysis (the earlier ones
// stay in the log); a request repeating an Idempotency-Key answers the
// analysis first stored under it and judges nothing.
func (s *simulator) RunConversationAnalysis(w http.ResponseWriter, r *http.Request) error {
	if s.app.Conversations == nil {
		return apperr.ServiceUnavailable
	}
	c := api.CallerOf(r)
	convID := mux.Vars(r)["conversation_id"]
	if c.CommandID != "" {
		first, found, err := s.app.AnalysisByCommand(r.Context(), c.WorkspaceID, convID, c.CommandID)
		if err != nil {
			return err
		}
		if found {
			httpx.WriteJSON(w, http.StatusOK, AnalysisView(first))
			return nil
		}
	}
	agentID, transcript, err := s.app.Conversations.Conversation(r.Context(), c, convID)
	if err != nil {
		return err
	}
	if len(transcript) == 0 {
		return httpx.ValidationErrors{{Loc: []any{"path", "conversation_id"}, Msg: "The conversation was recorded without a transcript: there is nothing to judge.", Type: "value_error"}}
	}
	agent, err := s.app.Agent(r.Context(), c.WorkspaceID, agentID)
	if err != nil {
		return err
	}
	history := make([]domain.Message, 0, len(transcript))
	for _, raw := range transcript {
		var m domain.Message
		if err := json.Unmarshal(raw, &m); err != nil {
			return fmt.Errorf("conversation %s: a turn: %w", convID, err)
		}
		history = append(history, m)
	}
	run := runner.Run{
		Invocation: &testingv1.Invocation{InvocationId: "analysis", WorkspaceId: c.WorkspaceID, AgentId: agentID, RepeatCount: 1},
		Test:       &testingv1.PlannedTest{TestId: "analysis", TestName: "Conversation analysis", TestType: domain.TypeSimulation},
		Definition: domain.TestInput{ChatHistory: history}, RunID: "analysis",
	}
	criteria := agentCriteria(agent.GetPlatformSettingsJson(), nil)
	res := s.exec.JudgeRecorded(r.Context(), run, criteria)
	an := &testingv1.ConversationAnalysis{
		AnalysisId: app.NewAnalysisID(), WorkspaceId: c.WorkspaceID, ConversationId: convID, AgentId: agentID,
		CallSuccessful: runner.CallSuccessful(res.Criteria), TranscriptSummary: res.Summary, Error: res.Error,
		Judge: &testingv1.ModelUsage{Provider: res.Judge.Provider, Model: res.Judge.Model, PromptTokens: res.Judge.PromptTokens,
			CompletionTokens: res.Judge.CompletionTokens, TotalTokens: res.Judge.TotalTokens, ModelCalls: res.Judge.Calls, CachedModelCalls: res.Judge.Cached},
		RequestedByUserId: c.UserID, AnalysedAtUnixMs: s.app.Now().UnixMilli(),
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
		httpx.WriteJSON(w, http.StatusOK, AnalysisView(an))
		return nil
	}
	stored, err := s.app.RecordAnalysis(r.Context(), c, an)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, AnalysisView(stored))
	return nil
}

// AnalysisView is a conversation analysis as POST …/analysis/run answers
// it: the public analysis shape, the judge's usage (model_usage), and what
// this platform adds (analysis_id, analysed_at_unix_secs, stored).
func AnalysisView(an *testingv1.ConversationAnalysis) map[string]any {
	results := map[string]any{}
	list := make([]map[string]any, 0, len(an.GetCriteria()))
	for _, c := range an.GetCriteria() {
		v := map[string]any{"criteria_id": c.GetId(), "result": c.GetResult(), "rationale": c.GetRationale()}
		results[c.GetId()] = v
		list = append(list, v)
	}
	out := map[string]any{
		"conversation_id": an.GetConversationId(), "agent_id": an.GetAgentId(), "model_usage": UsageView(an.GetJudge()),
		"analysis": map[string]any{"evaluation_criteria_results": results, "evaluation_criteria_results_list": list,
			"data_collection_results": map[string]any{}, "call_successful": an.GetCallSuccessful(), "transcript_summary": an.GetTranscriptSummary()},
		"analysis_id": an.GetAnalysisId(), "analysed_at_unix_secs": an.GetAnalysedAtUnixMs() / 1000, "stored": an.GetError() == "",
	}
	if e := an.GetError(); e != "" {
		out["error"] = e
	}
	return out
}
