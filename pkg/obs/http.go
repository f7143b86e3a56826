package obs

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
)

// HTTPMetrics counts and times requests by route template, so paths with
// ids do not explode the label space.
type HTTPMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewHTTPMetrics registers request metrics for service on reg.
func NewHTTPMetrics(reg prometheus.Registerer, service string) *HTTPMetrics {
	// Registered once per process and service: a process serving one
	// service twice (the all-in-one with several embedded runners) counts
	// both into the same series instead of failing at start.
	return &HTTPMetrics{
		requests: Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voiceai_http_requests_total", Help: "HTTP requests served, by route and status.",
			ConstLabels: prometheus.Labels{"service": service},
		}, []string{"method", "route", "status"})),
		duration: Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "voiceai_http_request_duration_seconds", Help: "HTTP request latency, by route.",
			ConstLabels: prometheus.Labels{"service": service},
			Buckets:     []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"method", "route"})),
	}
}

// Middleware records every request served by a gorilla/mux router.
func (m *HTTPMetrics) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		route := "unmatched"
		if cr := mux.CurrentRoute(r); cr != nil {
			if tpl, err := cr.GetPathTemplate(); err == nil {
				route = tpl
			}
		}
		m.requests.WithLabelValues(r.Method, route, strconv.Itoa(sw.status)).Inc()
		m.duration.WithLabelValues(r.Method, route).Observe(time.Since(start).Seconds())
	})
}

// statusRecorder keeps the status the response went out with: the first
// final one written (net/http drops a later one as superfluous), or 200
// when the body began without one. An informational 1xx precedes it.
type statusRecorder struct {
	http.ResponseWriter
	status int
	sent   bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.sent && code >= 200 {
		s.status, s.sent = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if !s.sent {
		s.status, s.sent = http.StatusOK, true
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
