// Package tracing records OpenTelemetry spans: from the gateway, across
// NATS (the W3C traceparent travels in message headers), into every
// service, runner and dispatcher. It names only the OpenTelemetry API;
// the process installs the SDK that records and exports spans (package
// otlp, at start). Without it nothing is recorded, and the trace context
// still flows, so logs and events carry trace ids either way.
package tracing

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

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
