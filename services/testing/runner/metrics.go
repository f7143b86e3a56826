package runner

import (
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// Metrics are a runner worker's own numbers: runs by outcome and how long
// they took, and what the model was asked (calls, cached answers,
// tokens), by provider and model.
type Metrics struct {
	runs     *prometheus.CounterVec
	duration *prometheus.HistogramVec
	calls    *prometheus.CounterVec
	tokens   *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	// agentTurn is how fast agents answered their turns, agentFirstToken
	// how fast they began them.
	agentTurn       *prometheus.HistogramVec
	agentFirstToken *prometheus.HistogramVec

	// usage holds each model's counters once looked up: a run counts
	// four of them, and a label lookup costs more than the count.
	usage sync.Map // [provider, model] -> *usageCounters
}

// usageCounters are the counters of one provider's model.
type usageCounters struct {
	calls, cachedCalls, promptTokens, completionTokens prometheus.Counter
}

// usageOf is the counters of u's model.
func (m *Metrics) usageOf(u *testingv1.ModelUsage) *usageCounters {
	p, model := u.GetProvider(), u.GetModel()
	key := [2]string{p, model}
	if c, ok := m.usage.Load(key); ok {
		return c.(*usageCounters)
	}
	c, _ := m.usage.LoadOrStore(key, &usageCounters{
		calls: m.calls.WithLabelValues(p, model, "false"), cachedCalls: m.calls.WithLabelValues(p, model, "true"),
		promptTokens: m.tokens.WithLabelValues(p, model, "prompt"), completionTokens: m.tokens.WithLabelValues(p, model, "completion"),
	})
	return c.(*usageCounters)
}

// register registers c with reg, or answers the collector registered
// before it (the runners of one process share their metrics).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, err
}

// NewMetrics registers a runner's metrics with reg (once per registry:
// the runners of one process share them).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voiceai_runner_runs_total",
			Help: "Runs a runner finished, by outcome: passed, failed (the judge said so), error (no verdict: the model or the run failed).",
		}, []string{"outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "voiceai_runner_run_duration_seconds",
			Help:    "How long one run took, model calls included, by test type.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10), // 1ms .. ~4.4 min
		}, []string{"type"}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voiceai_model_calls_total",
			Help: "Model requests made by runs (cached=true: answered from the response cache instead).",
		}, []string{"provider", "model", "cached"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voiceai_model_tokens_total",
			Help: "Tokens the model reported, by kind (prompt, completion).",
		}, []string{"provider", "model", "kind"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "voiceai_model_request_duration_seconds",
			Help:    "How long one model request took, retries included, by outcome (ok, error).",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 12), // 50ms .. ~100s
		}, []string{"provider", "model", "outcome"}),
		agentTurn: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "voiceai_runner_agent_turn_seconds",
			Help:    "How long the agent took to answer one of its turns in a run, by the model that played it (provider custom-llm: the agent's own endpoint).",
			Buckets: prometheus.ExponentialBuckets(0.025, 2, 12), // 25ms .. ~51s
		}, []string{"provider", "model"}),
		agentFirstToken: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "voiceai_runner_agent_first_token_seconds",
			Help:    "How long after one of its turns was asked for the agent's first content came (time to first token; an answer read whole: its whole time), by the model that played it.",
			Buckets: prometheus.ExponentialBuckets(0.025, 2, 12), // 25ms .. ~51s
		}, []string{"provider", "model"}),
	}
	var err error
	for _, h := range []**prometheus.HistogramVec{&m.duration, &m.latency, &m.agentTurn, &m.agentFirstToken} {
		if *h, err = register(reg, *h); err != nil {
			return nil, err
		}
	}
	for _, c := range []**prometheus.CounterVec{&m.runs, &m.calls, &m.tokens} {
		if *c, err = register(reg, *c); err != nil {
			return nil, err
		}
	}
	for _, outcome := range []string{"passed", "failed", "error"} {
		m.runs.WithLabelValues(outcome) // exported at 0, so rates work from the start
	}
	return m, nil
}

// observe records one finished run of a test of type testType.
func (m *Metrics) observe(testType string, res *testingv1.RunResult) {
	if m == nil || res == nil {
		return
	}
	outcome := "error"
	switch {
	case res.GetError() != "":
	case res.GetStatus() == domain.RunPassed:
		outcome = "passed"
	case res.GetStatus() == domain.RunFailed:
		outcome = "failed"
	}
	m.runs.WithLabelValues(outcome).Inc()
	if start, end := res.GetStartedAtUnixMs(), res.GetFinishedAtUnixMs(); start > 0 && end >= start {
		m.duration.WithLabelValues(testType).Observe((time.Duration(end-start) * time.Millisecond).Seconds())
	}
	for _, u := range []*testingv1.ModelUsage{res.GetUsage(), res.GetAgentUsage()} {
		if u == nil {
			continue
		}
		c := m.usageOf(u)
		c.calls.Add(float64(u.GetModelCalls()))
		c.cachedCalls.Add(float64(u.GetCachedModelCalls()))
		c.promptTokens.Add(float64(u.GetPromptTokens()))
		c.completionTokens.Add(float64(u.GetCompletionTokens()))
	}
	if a := res.GetAgentUsage(); a != nil && len(res.GetAgentTurnMs()) > 0 {
		turns := m.agentTurn.WithLabelValues(a.GetProvider(), a.GetModel())
		for _, ms := range res.GetAgentTurnMs() {
			turns.Observe((time.Duration(ms) * time.Millisecond).Seconds())
		}
		first := m.agentFirstToken.WithLabelValues(a.GetProvider(), a.GetModel())
		for _, ms := range res.GetAgentFirstTokenMs() {
			first.Observe((time.Duration(ms) * time.Millisecond).Seconds())
		}
	}
}

// ObserveModel times the requests of one model (see OpenAI.Observe).
func (m *Metrics) ObserveModel(provider, model string) func(time.Duration, error) {
	ok, failed := m.latency.WithLabelValues(provider, model, "ok"), m.latency.WithLabelValues(provider, model, "error")
	return func(took time.Duration, err error) {
		if err != nil {
			failed.Observe(took.Seconds())
		} else {
			ok.Observe(took.Seconds())
		}
	}
}
