package dispatcher

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	attempts *prometheus.CounterVec
	duration prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voiceai_webhook_attempts_total", Help: "Webhook delivery attempts by result (delivered, retry, failed, gone, dropped).",
		}, []string{"result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "voiceai_webhook_attempt_duration_seconds", Help: "Duration of webhook delivery attempts.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12),
		}),
	}
	if reg == nil {
		return m
	}
	m.attempts = register(reg, m.attempts)
	m.duration = register(reg, m.duration)
	return m
}

// register reuses a collector another replica in the process registered.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
	}
	return c
}
