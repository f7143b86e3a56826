package wire

import "encoding/json"

// ConversationRow is a conversation in a listing (GET
// /v1/convai/conversations), in the public shape.
type ConversationRow struct {
	AgentID          string `json:"agent_id"`
	ConversationID   string `json:"conversation_id"`
	StartTimeUnix    int64  `json:"start_time_unix_secs"`
	CallDurationSecs int64  `json:"call_duration_secs"`
	MessageCount     int    `json:"message_count"`
	Status           string `json:"status"`
	CallSuccessful   string `json:"call_successful"`
	// Only with summary_mode=include.
	TranscriptSummary *string  `json:"transcript_summary,omitempty"`
	ToolNames         []string `json:"tool_names,omitempty"`
	Rating            *int     `json:"rating,omitempty"` // once rated: like 5, dislike 1
	TagIDs            []string `json:"tag_ids,omitempty"`
}

// ConversationPage is a page of that listing.
type ConversationPage struct {
	Conversations []ConversationRow `json:"conversations"`
	NextCursor    *string           `json:"next_cursor"`
	HasMore       bool              `json:"has_more"`
}

// ConversationAnalysis is a conversation's analysis as its GET and a
// re-judging (POST …/analysis/run) answer it: the public shape, where
// the latest re-judged analysis, when there is one, stands in for what
// the call stack reported but for the data collected. Beyond the public
// shape: the reported outcome, which the listing's call_successful and
// its filter read, and the judge, null until a re-judging.
type ConversationAnalysis struct {
	CallSuccessful                string                      `json:"call_successful"`
	ReportedCallSuccessful        string                      `json:"reported_call_successful"`
	TranscriptSummary             string                      `json:"transcript_summary"`
	EvaluationCriteriaResults     map[string]CriterionVerdict `json:"evaluation_criteria_results"`
	EvaluationCriteriaResultsList []CriterionVerdict          `json:"evaluation_criteria_results_list"`
	DataCollectionResults         map[string]DataCollected    `json:"data_collection_results"`
	Judge                         *AnalysisJudge              `json:"judge"`
}

// SetCriteria sets the evaluation criteria's results, as a map and as a
// list in the order given.
func (a *ConversationAnalysis) SetCriteria(results ...CriterionVerdict) {
	a.EvaluationCriteriaResults = make(map[string]CriterionVerdict, len(results))
	a.EvaluationCriteriaResultsList = make([]CriterionVerdict, 0, len(results))
	for _, r := range results {
		a.EvaluationCriteriaResults[r.ID] = r
		a.EvaluationCriteriaResultsList = append(a.EvaluationCriteriaResultsList, r)
	}
}

// CriterionVerdict is one evaluation criterion's result.
type CriterionVerdict struct {
	ID        string `json:"criteria_id"`
	Result    string `json:"result"` // success, failure, unknown
	Rationale string `json:"rationale"`
}

// DataCollected is one data collection item: its value (any JSON value,
// null when nothing was collected) and why, as the call stack reported it.
type DataCollected struct {
	DataCollectionID string          `json:"data_collection_id"`
	Value            json.RawMessage `json:"value"`
	Rationale        string          `json:"rationale"`
	JSONSchema       json.RawMessage `json:"json_schema,omitempty"`
}

// AnalysisJudge is which judge made a re-judged analysis, and when.
type AnalysisJudge struct {
	AnalysisID     string `json:"analysis_id"`
	Provider       string `json:"judge_provider"`
	Model          string `json:"judge_model"`
	AnalysedAtUnix int64  `json:"analysed_at_unix_secs"`
}
