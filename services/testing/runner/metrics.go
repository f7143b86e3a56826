package runner

import (
	"errors"
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
	}
	for _, c := range []prometheus.Collector{m.runs, m.duration, m.calls, m.tokens, m.latency} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, err
			}
			switch existing := are.ExistingCollector.(type) {
			case *prometheus.CounterVec:
				switch c {
				case m.runs:
					m.runs = existing
				case m.calls:
					m.calls = existing
				case m.tokens:
					m.tokens = existing
				}
			case *prometheus.HistogramVec:
				if c == m.duration {
					m.duration = existing
				} else {
					m.latency = existing
				}
			}
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
	u := res.GetUsage()
	if u == nil {
		return
	}
	m.calls.WithLabelValues(u.GetProvider(), u.GetModel(), "false").Add(float64(u.GetModelCalls()))
	m.calls.WithLabelValues(u.GetProvider(), u.GetModel(), "true").Add(float64(u.GetCachedModelCalls()))
	m.tokens.WithLabelValues(u.GetProvider(), u.GetModel(), "prompt").Add(float64(u.GetPromptTokens()))
	m.tokens.WithLabelValues(u.GetProvider(), u.GetModel(), "completion").Add(float64(u.GetCompletionTokens()))
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
