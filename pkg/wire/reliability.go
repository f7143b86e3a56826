package wire

// Reliability is how reliably runs passed (schema ReliabilityFigures):
// the finished runs, the share that passed with its Wilson 95% interval
// and, over one test's runs, pass^k.
type Reliability struct {
	Runs         int64     `json:"runs"` // finished: passed or failed
	Passed       int64     `json:"passed"`
	PassRate     float64   `json:"pass_rate"`
	PassRateCI95 []float64 `json:"pass_rate_ci95"`
	// PassHatK belongs to one test's repeats: an invocation's summary,
	// over a mix of tests, has none.
	PassHatK *PassHatK `json:"pass_hat_k,omitempty"`
}

// PassHatK is the chance that K runs in a row all pass.
type PassHatK struct {
	K     int     `json:"k"`
	Value float64 `json:"value"`
}

// TestReliability is a test's reliability over its recent invocations
// (schema TestReliability): together, with the agent's latency over
// their runs' turns, and per invocation, newest first.
type TestReliability struct {
	Reliability
	AgentLatency AgentLatency            `json:"agent_latency"`
	Invocations  []InvocationReliability `json:"invocations"`
}

// InvocationReliability is a test's reliability in one invocation.
type InvocationReliability struct {
	Reliability
	InvocationID  string       `json:"invocation_id"`
	AgentID       string       `json:"agent_id"` // a test may run against several agents
	CreatedAtUnix int64        `json:"created_at_unix_secs"`
	AgentLatency  AgentLatency `json:"agent_latency"`
}
