package wire

// AgentLatency is how long an agent took to answer its turns and to begin
// them (time to first token: what a caller waits before the agent
// speaks), in milliseconds (schema AgentLatency): a run's, with each turn
// in TurnMs and FirstTokenMs in order (no FirstTokenMs for runs recorded
// before they were), or an invocation's over every turn of its runs,
// percentiles only. A percentile is null where no turn was recorded.
type AgentLatency struct {
	TurnMs          []int64 `json:"turn_ms,omitempty"`
	Turns           int     `json:"turns"`
	P50Ms           *int64  `json:"p50_ms"`
	P95Ms           *int64  `json:"p95_ms"`
	MaxMs           *int64  `json:"max_ms"`
	FirstTokenMs    []int64 `json:"first_token_ms,omitempty"`
	FirstTokenP50Ms *int64  `json:"first_token_p50_ms"`
	FirstTokenP95Ms *int64  `json:"first_token_p95_ms"`
	FirstTokenMaxMs *int64  `json:"first_token_max_ms"`
}

// LatencyBudget is the most an agent may take at the 95th percentile of
// its turns (schema LatencyBudget), in milliseconds; a bound left null is
// not checked.
type LatencyBudget struct {
	FirstTokenP95Ms *int64 `json:"first_token_p95_ms"`
	TurnP95Ms       *int64 `json:"turn_p95_ms"`
}

// BudgetBreach is a latency budget a run or a load step went over
// (schema LatencyBudgetBreach).
type BudgetBreach struct {
	Metric     string `json:"metric"` // first_token_p95, turn_p95
	MeasuredMs int64  `json:"measured_ms"`
	BudgetMs   int64  `json:"budget_ms"`
}
