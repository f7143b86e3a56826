package wire

// LoadTest is a load test (schema LoadTest, beyond the public API): a
// test played by steps of simultaneous callers, one step after another.
type LoadTest struct {
	ID                string         `json:"id"`
	AgentID           string         `json:"agent_id"`
	TestID            string         `json:"test_id"`
	TestName          string         `json:"test_name"`
	Status            string         `json:"status"` // running, completed, cancelled
	CreatedAtUnixSecs int64          `json:"created_at_unix_secs"`
	TurnsPerCaller    int            `json:"turns_per_caller"`
	LatencyBudget     *LatencyBudget `json:"latency_budget"`
	// CurrentStep is the step under way (null once none is).
	CurrentStep *int `json:"current_step"`
	// BrokeBudgetAtStep is the first step that did not meet its budget,
	// and BrokeBudgetAtCallers its callers (null while none has).
	BrokeBudgetAtStep    *int       `json:"broke_budget_at_step"`
	BrokeBudgetAtCallers *int       `json:"broke_budget_at_callers"`
	Steps                []LoadStep `json:"steps"`
}

// LoadStep is one step of a load test (schema LoadStep): its figures are
// null until it has completed with a turn answered.
type LoadStep struct {
	Step        int           `json:"step"`
	Callers     int           `json:"callers"`
	PeakCallers *int          `json:"peak_callers,omitempty"` // the most calling at once; nil: not known
	Status      string        `json:"status"`                 // pending, running, completed, cancelled
	Turns       int64         `json:"turns"`
	FailedTurns int64         `json:"failed_turns"`
	FailedShare float64       `json:"failed_share"`
	Failures    []LoadFailure `json:"failures"`
	// FirstTokenMs and TurnMs are nearest-rank percentiles of the answered
	// turns, in milliseconds; OverheadUs the platform's own time per turn,
	// in microseconds.
	FirstTokenMs     *Percentiles   `json:"first_token_ms"`
	TurnMs           *Percentiles   `json:"turn_ms"`
	OverheadUs       *Overhead      `json:"overhead_us"`
	MetBudget        *bool          `json:"met_budget"`
	BudgetBreaches   []BudgetBreach `json:"budget_breaches"`
	StartedAtUnixMs  *int64         `json:"started_at_unix_ms"`
	FinishedAtUnixMs *int64         `json:"finished_at_unix_ms"`
}

// LoadFailure counts a step's failed turns of one reason.
type LoadFailure struct {
	Reason string `json:"reason"`
	Count  int64  `json:"count"`
}

// Percentiles are a step's p50, p95 and maximum.
type Percentiles struct {
	P50 int64 `json:"p50"`
	P95 int64 `json:"p95"`
	Max int64 `json:"max"`
}

// Overhead is the p50 and p95 of the platform's own time per turn.
type Overhead struct {
	P50 int64 `json:"p50"`
	P95 int64 `json:"p95"`
}
