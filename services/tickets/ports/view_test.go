package ports

import (
	"encoding/json"
	"testing"

	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// A conversation's analysis shows what the call stack reported as it
// came: values of any JSON type, rationales, items with nothing
// collected; until that is kept, the summary's text values stand in.
func TestAnalysisShowsWhatWasReported(t *testing.T) {
	c := app.ConversationDetail{ConversationSummary: app.ConversationSummary{CallSuccessful: "success",
		Evaluations: map[string]string{"resolved": "success"}, DataCollection: map[string]string{"n": "42", "o": `{"city":"Rome"}`}}}
	encode := func(v any) string { b, _ := json.Marshal(v); return string(b) }

	before := analysisOf(c)
	if got := encode(before.DataCollectionResults); got != `{"n":{"data_collection_id":"n","value":"42","rationale":""},"o":{"data_collection_id":"o","value":"{\"city\":\"Rome\"}","rationale":""}}` {
		t.Errorf("before it is kept: %s", got)
	}
	c.Reported = json.RawMessage(`{"evaluation_criteria_results":{"resolved":{"criteria_id":"resolved","result":"success","rationale":"It was."}},
		"data_collection_results":{"n":{"data_collection_id":"n","value":42,"rationale":"forty-two"},"o":{"value":{"city":"Rome"},"json_schema":{"type":"object"}},
		"z":{"data_collection_id":"z","value":null,"rationale":null}}}`)
	after := analysisOf(c)
	if got := encode(after.DataCollectionResults); got != `{"n":{"data_collection_id":"n","value":42,"rationale":"forty-two"},`+
		`"o":{"data_collection_id":"o","value":{"city":"Rome"},"rationale":"","json_schema":{"type":"object"}},"z":{"data_collection_id":"z","value":null,"rationale":""}}` {
		t.Errorf("kept: %s", got)
	}
	if got := encode(after.EvaluationCriteriaResultsList); got != `[{"criteria_id":"resolved","result":"success","rationale":"It was."}]` {
		t.Errorf("criteria: %s", got)
	}
}
