package stack

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// POST /v1/convai/conversations/{id}/analysis/run judges a recorded
// conversation's evaluation criteria again with the runners' judge: each
// of the agent's prompt criteria against the transcript as it was.
func TestConversationAnalysisRunThroughTheGateway(t *testing.T) {
	s := startForTesting(t)
	r := call(t, s, "POST", "/v1/convai/agents/create", adminKey, `{"name":"Front desk",
	  "conversation_config":{"agent":{"prompt":{"prompt":"Our opening hours are nine to five every weekday."}}},
	  "platform_settings":{"evaluation":{"criteria":[
	    {"id":"hours","name":"Hours given","type":"prompt","conversation_goal_prompt":"The agent states the opening hours nine to five"},
	    {"id":"refund","name":"Refund window","type":"prompt","conversation_goal_prompt":"The agent says refunds are given within 30 days"}]}}}`)
	if r.Code != 201 {
		t.Fatalf("agent: %d %s", r.Code, r.Body)
	}
	agent := r.JSON(t)["agent_id"].(string)
	at := time.Now().Add(-time.Hour)
	ingest(t, s, adminKey, "conversation_started", at, map[string]any{"conversation_id": "conv_analysis_1", "agent_id": agent})
	ingest(t, s, adminKey, "conversation_ended", at.Add(time.Minute), map[string]any{"conversation_id": "conv_analysis_1", "agent_id": agent,
		"call_successful": "success", "transcript": []map[string]any{
			{"role": "agent", "message": "Hello, how can I help?", "time_in_call_secs": 0},
			{"role": "user", "message": "When are you open?", "time_in_call_secs": 2},
			{"role": "agent", "message": "Our opening hours are nine to five every weekday.", "time_in_call_secs": 4}}})
	ingest(t, s, adminKey, "conversation_started", at, map[string]any{"conversation_id": "conv_analysis_2", "agent_id": agent})
	eventually(t, 10*time.Second, "the transcript is kept", func() bool {
		return strings.Contains(string(call(t, s, "GET", "/v1/convai/conversations/conv_analysis_1", adminKey, "").Body), "nine to five")
	})
	eventually(t, 10*time.Second, "the second conversation is known", func() bool {
		return call(t, s, "GET", "/v1/convai/conversations/conv_analysis_2", adminKey, "").Code == 200
	})

	r = call(t, s, "POST", "/v1/convai/conversations/conv_analysis_1/analysis/run", adminKey, "")
	var got struct {
		ConversationID string `json:"conversation_id"`
		AgentID        string `json:"agent_id"`
		Analysis       struct {
			Results map[string]struct {
				Result string `json:"result"`
			} `json:"evaluation_criteria_results"`
			List           []map[string]any `json:"evaluation_criteria_results_list"`
			CallSuccessful string           `json:"call_successful"`
		} `json:"analysis"`
		ModelUsage struct {
			Model string `json:"model"`
		} `json:"model_usage"`
	}
	if err := json.Unmarshal(r.Body, &got); r.Code != 200 || err != nil {
		t.Fatalf("analysis: %d %s", r.Code, r.Body)
	}
	if got.ConversationID != "conv_analysis_1" || got.AgentID != agent || len(got.Analysis.List) != 2 ||
		got.Analysis.Results["hours"].Result != "success" || got.Analysis.Results["refund"].Result != "failure" ||
		got.Analysis.CallSuccessful != "failure" || got.ModelUsage.Model != "offline-v2" {
		t.Fatalf("analysis: %s", r.Body)
	}
	// The stored conversation is not changed by it.
	if r := call(t, s, "GET", "/v1/convai/conversations/conv_analysis_1", adminKey, ""); !strings.Contains(string(r.Body), `"call_successful":"success"`) {
		t.Fatalf("the conversation changed: %s", r.Body)
	}
	if r := call(t, s, "POST", "/v1/convai/conversations/conv_analysis_2/analysis/run", adminKey, ""); r.Code != 422 ||
		!strings.Contains(string(r.Body), `"loc":["path","conversation_id"]`) {
		t.Fatalf("without a transcript: %d %s", r.Code, r.Body)
	}
	if r := call(t, s, "POST", "/v1/convai/conversations/conv_unknown/analysis/run", adminKey, ""); r.Code != 404 {
		t.Fatalf("an unknown conversation: %d %s", r.Code, r.Body)
	}
}
