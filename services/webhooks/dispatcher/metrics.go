package dispatcher

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/voiceai-platform/voiceai/pkg/obs"
)

type metrics struct {
	attempts *prometheus.CounterVec
	duration prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voiceai_webhook_attempts_total", Help: "Webhook delivery attempts by result (delivered, retry, failed, gone, dropped; deferred: put back to wait for its workspace's turn, no attempt made).",
		}, []string{"result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "voiceai_webhook_attempt_duration_seconds", Help: "Duration of webhook delivery attempts.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12),
		}),
	}
	if reg == nil {
		return m
	}
	m.attempts = obs.Register(reg, m.attempts)
	m.duration = obs.Register(reg, m.duration)
	for _, result := range []string{"delivered", "retry", "failed", "gone", "dropped"} {
		m.attempts.WithLabelValues(result) // exported at 0, so rates and alerts work from the start
	}
	return m
}
