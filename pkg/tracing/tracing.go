// Package tracing records OpenTelemetry spans: from the gateway, across
// NATS (the W3C traceparent travels in message headers), into every
// service, runner and dispatcher. Spans are exported by OTLP/HTTP when
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is
// set, configured by the standard OTEL_* variables; otherwise nothing is
// recorded, and the trace context still flows, so logs and events carry
// trace ids either way.
package tracing

import (
	"context"
	"os"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

// Enabled reports whether the environment asks for spans to be exported.
func Enabled() bool {
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup installs the process's tracer provider and the W3C trace-context
// propagator, and returns what flushes and stops it at exit.
func Setup(ctx context.Context, service string) (shutdown func(context.Context) error, err error) {
	otel.SetTextMapPropagator(propagation.TraceContext{})
	if !Enabled() {
		return func(context.Context) error { return nil }, nil
	}
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

// Tracer is the platform's tracer (of whichever provider is installed).
func Tracer() trace.Tracer { return otel.Tracer("github.com/voiceai-platform/voiceai") }

// Start starts a span as a child of the trace context a traceparent
// carries ("" or malformed: a new trace).
func Start(ctx context.Context, traceparent, name string, kind trace.SpanKind, attrs ...trace.SpanStartOption) (context.Context, trace.Span) {
	return Tracer().Start(Extract(ctx, traceparent), name, append(attrs, trace.WithSpanKind(kind))...)
}

// Extract is ctx carrying the trace context traceparent names, as a
// remote parent, without starting a span: what a worker logs about a
// message then names the message's trace. "" or malformed: ctx as is.
// The W3C format is read whether or not Setup installed the propagator.
func Extract(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}

// IDs are the trace and span ids (lower-case hex) of ctx's span, or of
// the traceparent WithRequestTrace put in ctx; "" when ctx carries none.
func IDs(ctx context.Context) (traceID, spanID string) {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		tp := RequestTrace(ctx)
		if tp == "" {
			return "", ""
		}
		sc = trace.SpanContextFromContext(Extract(context.Background(), tp))
		if !sc.IsValid() {
			return "", ""
		}
	}
	return sc.TraceID().String(), sc.SpanID().String()
}

// Traceparent is the W3C traceparent of ctx's span ("" when none).
func Traceparent(ctx context.Context) string {
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"]
}

type requestTraceKey struct{}

// WithRequestTrace is ctx carrying the traceparent of the request it
// serves, for what the request causes (events, forwarded requests).
func WithRequestTrace(ctx context.Context, traceparent string) context.Context {
	return context.WithValue(ctx, requestTraceKey{}, traceparent)
}

// RequestTrace returns the traceparent WithRequestTrace put in ctx, or "".
func RequestTrace(ctx context.Context) string {
	tp, _ := ctx.Value(requestTraceKey{}).(string)
	return tp
}
