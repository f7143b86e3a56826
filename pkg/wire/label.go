package wire

import "encoding/json"

// RunLabel is a reviewer's label of a run's verdict, with what it
// reviewed (schema RunLabel); the run's own result is never changed.
type RunLabel struct {
	LabelID      string      `json:"label_id"`
	InvocationID string      `json:"invocation_id"`
	RunID        string      `json:"run_id"`
	TestID       string      `json:"test_id"`
	TestName     string      `json:"test_name"`
	Attempt      int32       `json:"attempt"` // the attempt whose result was reviewed
	Reviewed     RunReviewed `json:"reviewed"`
	LabelVerdict
}

// RunReviewed is what a run recorded when it was labelled.
type RunReviewed struct {
	Status          string   `json:"status"`
	ConditionResult string   `json:"condition_result"` // success, failure, unknown
	JudgeProvider   string   `json:"judge_provider"`
	JudgeModel      string   `json:"judge_model"`
	JudgeVotes      []string `json:"judge_votes"`
}

// ConversationLabel is a reviewer's label of a conversation's analysis,
// with what it reviewed (schema ConversationLabel); the analysis is never
// changed.
type ConversationLabel struct {
	LabelID        string           `json:"label_id"`
	ConversationID string           `json:"conversation_id"`
	AgentID        string           `json:"agent_id"`
	Reviewed       AnalysisReviewed `json:"reviewed"`
	LabelVerdict
}

// AnalysisReviewed is the conversation analysis labelled, as it was
// stored.
type AnalysisReviewed struct {
	AnalysisID     string `json:"analysis_id"`
	CallSuccessful string `json:"call_successful"` // success, failure, unknown
	JudgeProvider  string `json:"judge_provider"`
	JudgeModel     string `json:"judge_model"`
}

// LabelVerdict is what every label says of the verdict it reviewed, and
// who said it.
type LabelVerdict struct {
	VerdictCorrect bool `json:"verdict_correct"`
	Overturned     bool `json:"overturned"` // the judge was wrong
	// CorrectedResult is what the verdict should have been when a
	// success or a failure was overturned; null otherwise.
	CorrectedResult *string          `json:"corrected_result"`
	Criteria        []CriterionLabel `json:"criteria"`
	Note            string           `json:"note"`
	Reviewer        Reviewer         `json:"reviewer"`
	LabelledAtUnix  int64            `json:"labelled_at_unix"`
}

// CriterionLabel is one criterion of a label, said right or wrong on its
// own. JudgedResult, the criterion's own verdict, is a conversation
// criterion's only.
type CriterionLabel struct {
	ID           string `json:"id"`
	Text         string `json:"text"`
	Correct      bool   `json:"correct"`
	JudgedResult string `json:"judged_result,omitempty"`
}

// Reviewer is who gave a label.
type Reviewer struct {
	UserID string `json:"user_id"`
	Email  string `json:"email"`
	Name   string `json:"name"`
}

// ReviewItem is a run to review (schema ReviewQueue's runs): why it is
// queued, what the judge said and, once labelled, its label.
type ReviewItem struct {
	InvocationID      string          `json:"invocation_id"`
	RunID             string          `json:"run_id"`
	AgentID           string          `json:"agent_id"`
	TestID            string          `json:"test_id"`
	TestName          string          `json:"test_name"`
	TestType          string          `json:"test_type"`
	Status            string          `json:"status"`
	ConditionResult   ConditionResult `json:"condition_result"`
	Reasons           []string        `json:"reasons"` // failed, votes_disagreed, sampled_pass
	SuccessConditions []string        `json:"success_conditions"`
	// AgentResponses are the run's messages (schema Message), as a run's
	// GET answers them.
	AgentResponses json.RawMessage `json:"agent_responses"`
	JudgeModel     string          `json:"judge_model"`
	JudgeVotes     []string        `json:"judge_votes"`
	Error          string          `json:"error,omitempty"`
	CreatedAtUnix  int64           `json:"created_at_unix_secs"`
	Label          *RunLabel       `json:"label,omitempty"`
}

// VerdictLabel is a reviewer's current label of a run's verdict (kind
// run) or of a conversation's analysis (kind conversation), as a ticket
// shows it (schema VerdictLabel): the ids of the other kind are absent.
type VerdictLabel struct {
	Kind           string  `json:"kind"`
	InvocationID   *string `json:"invocation_id,omitempty"`
	RunID          *string `json:"run_id,omitempty"`
	ConversationID *string `json:"conversation_id,omitempty"`
	LabelID        string  `json:"label_id"`
	TestName       *string `json:"test_name,omitempty"`
	JudgeModel     string  `json:"judge_model"`
	// JudgedResult is what the judge said: a run's condition_result, a
	// conversation analysis' call_successful.
	JudgedResult string `json:"judged_result"`
	LabelVerdict
}
