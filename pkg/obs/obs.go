// Package obs sets up what every process needs to be observed: JSON logs
// through slog, and a Prometheus metrics endpoint that also serves the Go
// profiler (/debug/pprof/), so an operator can profile a live process.
package obs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// NewLogger returns a JSON logger at level writing to w.
// String values longer than MaxLogValue bytes are cut (panic stacks
// excepted), so a caller's 5,000-byte id cannot flood the logs. A line
// logged with a context names the context's trace (see TraceHandler).
func NewLogger(w io.Writer, level slog.Level, service string) *slog.Logger {
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: truncateAttr})
	return slog.New(TraceHandler(h)).With("service", service)
}

// MaxLogValue bounds a logged string.
const MaxLogValue = 1024

func truncateAttr(_ []string, a slog.Attr) slog.Attr {
	if a.Key == "stack" {
		return a
	}
	switch a.Value.Kind() {
	case slog.KindDuration: // as "10.922ms", where JSON would write nanoseconds with no unit
		return slog.String(a.Key, a.Value.Duration().String())
	case slog.KindString:
		if s := a.Value.String(); len(s) > MaxLogValue {
			return slog.String(a.Key, Truncate(s, MaxLogValue))
		}
	case slog.KindAny:
		if err, ok := a.Value.Any().(error); ok && len(err.Error()) > MaxLogValue {
			return slog.String(a.Key, Truncate(err.Error(), MaxLogValue))
		}
	}
	return a
}

// Truncate cuts s to at most n bytes on a rune boundary, saying how long
// it was.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// NewRegistry returns a registry with the Go runtime and process metrics.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// MetricsOff is the VOICEAI_METRICS_ADDR value that disables the endpoint
// (an empty variable means "the default", as for every setting).
const MetricsOff = "off"

// ListenMetrics binds the internal endpoint's address (nil, and no error,
// when addr is empty or MetricsOff). A process binds it before it starts,
// so an address it cannot listen on (in use, not one of its own) stops it
// at start, naming VOICEAI_METRICS_ADDR, instead of leaving it running
// without /readyz.
func ListenMetrics(addr string) (net.Listener, error) {
	if addr == "" || addr == MetricsOff {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("VOICEAI_METRICS_ADDR %q: cannot listen there: %w", addr, err)
	}
	return ln, nil
}

// ServeMetrics serves /metrics, /debug/pprof/, and the probes as /healthz
// and /readyz on addr until ctx ends, logging the address it listens on.
// An empty addr or MetricsOff disables the endpoint. The address is
// internal (loopback by default): none of it is meant for the public.
func ServeMetrics(ctx context.Context, addr string, reg *prometheus.Registry, probes ProbeHandlers, log *slog.Logger) error {
	ln, err := ListenMetrics(addr)
	if err != nil {
		return err
	}
	return ServeMetricsOn(ctx, ln, reg, probes, log)
}

// ServeMetricsOn is ServeMetrics on a listener ListenMetrics bound (nil:
// returns at once). It returns once ctx has ended and ln is closed.
func ServeMetricsOn(ctx context.Context, ln net.Listener, reg *prometheus.Registry, probes ProbeHandlers, log *slog.Logger) error {
	if ln == nil {
		return nil
	}
	log.Info("internal endpoint listening", "metrics_addr", ln.Addr().String())
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.Handle("/healthz", probes.LiveHandler())
	mux.Handle("/readyz", probes.ReadyHandler())
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Register registers c, or returns the collector of the same name another
// component of the process registered first (replicas in one process, or
// a service restarted on new connections).
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
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
