package stack

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/wire"
)

// POST /v1/convai/conversations/{id}/analysis/run judges a recorded
// conversation's evaluation criteria again with the runners' judge: each
// of the agent's prompt criteria against the transcript as it was. The
// analysis is stored and GET of the conversation shows it, with its judge
// model and when.
func TestConversationAnalysisRunThroughTheGateway(t *testing.T) {
	t.Parallel()
	s := startForTesting(t)
	agent := evaluatedAgent(t, s)
	at := time.Now().Add(-time.Hour)
	ingest(t, s, adminKey, "conversation_started", at, map[string]any{"conversation_id": "conv_analysis_1", "agent_id": agent})
	ingest(t, s, adminKey, "conversation_ended", at.Add(time.Minute), map[string]any{"conversation_id": "conv_analysis_1", "agent_id": agent,
		"call_successful": "success", "analysis": map[string]any{"data_collection_results": map[string]any{
			"city": map[string]any{"data_collection_id": "city", "value": "Denver"}}},
		"transcript": []map[string]any{
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

	r := call(t, s, "POST", "/v1/convai/conversations/conv_analysis_1/analysis/run", adminKey, "")
	var got struct {
		ConversationID string                    `json:"conversation_id"`
		AgentID        string                    `json:"agent_id"`
		Analysis       wire.ConversationAnalysis `json:"analysis"`
		ModelUsage     struct {
			Model string `json:"model"`
		} `json:"model_usage"`
		// The answer is the conversation, as the SDK parses it
		// (GetConversationResponseModel).
		Status     string `json:"status"`
		Transcript []any  `json:"transcript"`
	}
	if err := json.Unmarshal(r.Body, &got); r.Code != 200 || err != nil {
		t.Fatalf("analysis: %d %s", r.Code, r.Body)
	}
	// The judge's verdicts stand in for the call stack's; what it
	// collected stays.
	if a := got.Analysis; got.ConversationID != "conv_analysis_1" || got.AgentID != agent || got.Status != "done" || len(got.Transcript) != 3 ||
		len(a.EvaluationCriteriaResultsList) != 2 || a.EvaluationCriteriaResults["hours"].Result != "success" ||
		a.EvaluationCriteriaResults["refund"].Result != "failure" || a.CallSuccessful != "failure" || a.ReportedCallSuccessful != "success" ||
		string(a.DataCollectionResults["city"].Value) != `"Denver"` || a.Judge == nil || a.Judge.Model != "offline-v2" || got.ModelUsage.Model != "offline-v2" {
		t.Fatalf("analysis: %s", r.Body)
	}
	// The analysis is stored: the conversation shows it with its judge
	// model and when; the call stack's report stays beside it.
	first := r.JSON(t)
	if first["stored"] != true || first["analysis_id"] == "" {
		t.Fatalf("not stored: %s", r.Body)
	}
	var conv struct {
		Analysis wire.ConversationAnalysis `json:"analysis"`
	}
	shown := func() bool {
		r := call(t, s, "GET", "/v1/convai/conversations/conv_analysis_1", adminKey, "")
		conv.Analysis.Judge = nil
		return json.Unmarshal(r.Body, &conv) == nil && conv.Analysis.Judge != nil && conv.Analysis.Judge.AnalysisID == first["analysis_id"]
	}
	eventually(t, 10*time.Second, "the analysis shows on the conversation", shown)
	if a := conv.Analysis; a.CallSuccessful != "failure" || a.ReportedCallSuccessful != "success" || a.Judge.Model != "offline-v2" ||
		a.Judge.AnalysedAtUnix < at.Unix() || len(a.EvaluationCriteriaResultsList) != 2 || string(a.DataCollectionResults["city"].Value) != `"Denver"` ||
		a.EvaluationCriteriaResults["hours"].Result != "success" || a.EvaluationCriteriaResults["refund"].Result != "failure" {
		t.Fatalf("the conversation's analysis: %+v", conv.Analysis)
	}

	// Idempotency: a retry with the same key answers the first analysis;
	// a request without one judges anew, and the newest is shown (the
	// earlier stay in the event log).
	path := "/v1/convai/conversations/conv_analysis_1/analysis/run"
	keyed := call(t, s, "POST", path, adminKey, "", "Idempotency-Key", "analyse-once")
	again := call(t, s, "POST", path, adminKey, "", "Idempotency-Key", "analyse-once")
	if keyed.Code != 200 || again.Code != 200 || keyed.JSON(t)["analysis_id"] != again.JSON(t)["analysis_id"] ||
		keyed.JSON(t)["analysis_id"] == first["analysis_id"] {
		t.Fatalf("a retried analysis: %d %s, then %d %s", keyed.Code, keyed.Body, again.Code, again.Body)
	}
	first = keyed.JSON(t)
	eventually(t, 10*time.Second, "the newest analysis shows", shown)

	// Another workspace sees no such conversation.
	other := createWorkspace(t, s, "Elsewhere")
	if r := call(t, s, "POST", path, other.APIKey, ""); r.Code != 404 {
		t.Fatalf("another workspace's conversation: %d %s", r.Code, r.Body)
	}
	if r := call(t, s, "POST", "/v1/convai/conversations/conv_analysis_2/analysis/run", adminKey, ""); r.Code != 422 ||
		!strings.Contains(string(r.Body), `"loc":["path","conversation_id"]`) {
		t.Fatalf("without a transcript: %d %s", r.Code, r.Body)
	}
	if r := call(t, s, "POST", "/v1/convai/conversations/conv_unknown/analysis/run", adminKey, ""); r.Code != 404 {
		t.Fatalf("an unknown conversation: %d %s", r.Code, r.Body)
	}
}
