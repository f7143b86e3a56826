package wire

// ConditionResult is a test run's verdict (spec 2.3 condition_result):
// the result and the judge's rationale.
type ConditionResult struct {
	Result    string    `json:"result"`
	Rationale Rationale `json:"rationale"`
}

// Rationale is why the judge gave its result.
type Rationale struct {
	Messages []string `json:"messages"`
	Summary  string   `json:"summary"`
}
