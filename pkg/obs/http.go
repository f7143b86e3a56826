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
		sw := RecorderOf(w) // the request's own, when the httpx middlewares run first
		next.ServeHTTP(sw, r)
		route := "unmatched"
		if cr := mux.CurrentRoute(r); cr != nil {
			if tpl, err := cr.GetPathTemplate(); err == nil {
				route = tpl
			}
		}
		m.requests.WithLabelValues(r.Method, route, strconv.Itoa(sw.StatusFor(r))).Inc()
		m.duration.WithLabelValues(r.Method, route).Observe(time.Since(start).Seconds())
	})
}

// Recorder is a response writer that remembers what went out: the status
// and the size of the body. A request's middlewares share one (RecorderOf):
// its access line, its span and its metrics read the same status.
type Recorder struct {
	http.ResponseWriter
	status  int
	bytes   int
	started bool
}

// RecorderOf is w when it is a Recorder already, else w wrapped in one.
func RecorderOf(w http.ResponseWriter) *Recorder {
	if r, ok := w.(*Recorder); ok {
		return r
	}
	return &Recorder{ResponseWriter: w}
}

func (r *Recorder) WriteHeader(code int) {
	if r.started {
		// The response is under way (a handler failing mid-body, say after
		// a client stopped reading): a second status changes nothing, and
		// Go would log it as superfluous, an ERROR-looking line no one can
		// act on.
		return
	}
	if code >= 200 { // an informational 1xx may precede the status
		r.status, r.started = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *Recorder) Write(b []byte) (int, error) {
	if !r.started {
		r.WriteHeader(http.StatusOK)
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += n
	return n, err
}

// Status is the status the response went out with: the first final one
// written, 200 when the handler wrote none.
func (r *Recorder) Status() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}

// StatusClientClosed is what a request whose client hung up before any
// answer went out is logged and counted as (nginx's 499): not the 200 a
// handler that wrote nothing would be taken for, which made an outage
// whose clients all timed out look like a run of successes.
const StatusClientClosed = 499

// StatusFor is Status for r, the request served: StatusClientClosed when
// nothing went out and r's client is gone.
func (r *Recorder) StatusFor(req *http.Request) int {
	if !r.started && req.Context().Err() != nil {
		return StatusClientClosed
	}
	return r.Status()
}

// Bytes is the size of the body written.
func (r *Recorder) Bytes() int { return r.bytes }

// Started reports whether the response's status went out.
func (r *Recorder) Started() bool { return r.started }

func (r *Recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Flush lets streaming handlers push partial output.
func (r *Recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
