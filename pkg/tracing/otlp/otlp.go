// Package otlp installs the OpenTelemetry SDK a process records spans
// with (see package tracing): spans are exported by OTLP/HTTP when
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is
// set, configured by the standard OTEL_* variables. Only a process's main
// links it, so libraries and use cases carry no SDK.
package otlp

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
)

// Enabled reports whether the environment asks for spans to be exported.
func Enabled() bool {
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup installs the process's tracer provider and the W3C trace-context
// propagator, and returns what flushes and stops it at exit. An endpoint
// that is not an http(s) URL is refused by name; the SDK's own errors
// (an export the collector refused) go to log.
func Setup(ctx context.Context, service string, log *slog.Logger) (shutdown func(context.Context) error, err error) {
	otel.SetTextMapPropagator(propagation.TraceContext{})
	if !Enabled() {
		return func(context.Context) error { return nil }, nil
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		if err := checkEndpoint(name, os.Getenv(name)); err != nil {
			return nil, err
		}
	}
	otel.SetErrorHandler(exportErrors(log, time.Minute))
	exporter, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, err
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName("voiceai-"+service)))
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	return tp.Shutdown, nil
}

// checkEndpoint refuses an endpoint (unset: nil) that is not an http or
// https URL with a host, which the exporter would take and then fail to
// reach, every few seconds, for the life of the process.
func checkEndpoint(name, endpoint string) error {
	if endpoint == "" {
		return nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s %q: want an http(s) URL such as http://collector:4318", name, endpoint)
	}
	return nil
}

// exportErrors logs the SDK's errors as the process's JSON lines, where
// they went to the standard logger as plain text: the first at once,
// then at most one an interval, with how many it passed over.
func exportErrors(log *slog.Logger, interval time.Duration) otel.ErrorHandlerFunc {
	var next atomic.Int64 // unix nanos before which errors are only counted
	var passed atomic.Int64
	return func(err error) {
		now := time.Now().UnixNano()
		if at := next.Load(); now < at || !next.CompareAndSwap(at, now+interval.Nanoseconds()) {
			passed.Add(1)
			return
		}
		log.Warn("tracing: the OpenTelemetry SDK failed (spans may be lost)", "err", err, "errors_passed_over", passed.Swap(0))
	}
}
