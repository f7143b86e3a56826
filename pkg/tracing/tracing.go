// Package tracing records OpenTelemetry spans: from the gateway, across
// NATS (the W3C traceparent travels in message headers), into every
// service, runner and dispatcher. It names only the OpenTelemetry API;
// the process installs the SDK that records and exports spans (package
// otlp, at start). Without it nothing is recorded, and the trace context
// still flows, so logs and events carry trace ids either way.
package tracing

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Tracer is the platform's tracer (of whichever provider is installed).
func Tracer() trace.Tracer { return otel.Tracer("github.com/voiceai-platform/voiceai") }

// Start starts a span as a child of the trace context a traceparent
// carries ("" or malformed: a new trace).
//
// With no provider installed the span is the parent's context under
// another name, recording nothing, as OpenTelemetry's own stand-in makes
// it: Start hands back the parent's span itself, without the stand-in's
// context, options and span made for nobody (a dozen allocations a
// request, which runs through two or three spans).
func Start(ctx context.Context, traceparent, name string, kind trace.SpanKind, attrs ...trace.SpanStartOption) (context.Context, trace.Span) {
	ctx = Extract(ctx, traceparent)
	if !installed() {
		return ctx, trace.SpanFromContext(ctx)
	}
	return Tracer().Start(ctx, name, append(attrs, trace.WithSpanKind(kind))...)
}

// standIn is the provider OpenTelemetry answers with before one is
// installed (otel.SetTracerProvider replaces it).
var standIn = otel.GetTracerProvider()

// installed reports whether a provider that may record spans is installed.
func installed() bool { return otel.GetTracerProvider() != standIn }

// Extract is ctx carrying the trace context traceparent names, as a
// remote parent, without starting a span: what a worker logs about a
// message then names the message's trace. "" or malformed: ctx as is.
// The W3C format is read whether or not Setup installed the propagator.
func Extract(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	if sc, ok := parseVersion0(traceparent); ok {
		return trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}

// Where the fields of a version-00 traceparent begin:
// 00-<trace id>-<span id>-<flags>.
const (
	traceAt        = 3
	spanAt         = traceAt + 32 + 1
	flagsAt        = spanAt + 16 + 1
	traceparentLen = flagsAt + 2
)

// WellFormed reports whether tp has the shape of a W3C traceparent that
// a hop keeps rather than starting a trace of its own:
// <version>-<trace id>-<span id>-<flags>, 2, 32, 16 and 2 lower-case hex
// digits (a hand-written check: it runs twice a request).
func WellFormed(tp string) bool {
	if len(tp) != traceparentLen || tp[traceAt-1] != '-' || tp[spanAt-1] != '-' || tp[flagsAt-1] != '-' {
		return false
	}
	for i := 0; i < len(tp); i++ {
		if i == traceAt-1 || i == spanAt-1 || i == flagsAt-1 {
			continue
		}
		if _, ok := hexDigit(tp[i]); !ok {
			return false
		}
	}
	return true
}

// TraceID is the trace id of a well-formed traceparent, as log lines
// name the trace.
func TraceID(wellFormed string) string { return wellFormed[traceAt : spanAt-1] }

// Unsampled is a well-formed traceparent with its flags cleared: a trace
// nobody records.
func Unsampled(wellFormed string) string { return wellFormed[:flagsAt] + "00" }

// NewTraceparent starts a new trace, sampled: its first span decides
// whether it is recorded.
func NewTraceparent() string {
	var traceID trace.TraceID
	var spanID trace.SpanID
	_, _ = rand.Read(traceID[:])
	_, _ = rand.Read(spanID[:])
	return formatTraceparent(traceID, spanID, byte(trace.FlagsSampled))
}

// formatTraceparent writes a version-00 traceparent.
func formatTraceparent(traceID trace.TraceID, spanID trace.SpanID, flags byte) string {
	var b [traceparentLen]byte
	copy(b[:], "00-")
	hex.Encode(b[traceAt:spanAt-1], traceID[:])
	b[spanAt-1] = '-'
	hex.Encode(b[spanAt:flagsAt-1], spanID[:])
	b[flagsAt-1] = '-'
	hex.Encode(b[flagsAt:], []byte{flags})
	return string(b[:])
}

// parseVersion0 reads a version-00 traceparent, what every hop of the
// platform writes, as the W3C propagator does but without its carrier
// map: 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>, lower case,
// ids not all zero, no reserved flag bit. Anything else is left to the
// propagator (ok false), whose reading is the reference.
func parseVersion0(tp string) (trace.SpanContext, bool) {
	if len(tp) != traceparentLen || tp[:traceAt] != "00-" || tp[spanAt-1] != '-' || tp[flagsAt-1] != '-' {
		return trace.SpanContext{}, false
	}
	var scc trace.SpanContextConfig
	var flags [1]byte
	if !lowerHex(scc.TraceID[:], tp[traceAt:spanAt-1]) || !lowerHex(scc.SpanID[:], tp[spanAt:flagsAt-1]) ||
		!lowerHex(flags[:], tp[flagsAt:]) || flags[0] > 3 {
		return trace.SpanContext{}, false
	}
	scc.TraceFlags = trace.TraceFlags(flags[0]) & (trace.FlagsSampled | trace.FlagsRandom)
	scc.Remote = true
	sc := trace.NewSpanContext(scc)
	return sc, sc.IsValid()
}

// lowerHex decodes s, lower-case hex of exactly len(dst) bytes, into dst.
func lowerHex(dst []byte, s string) bool {
	if len(s) != 2*len(dst) {
		return false
	}
	for i := range dst {
		hi, ok1 := hexDigit(s[2*i])
		lo, ok2 := hexDigit(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
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
// It is what the W3C propagator's Inject writes, without its carrier map.
func Traceparent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return formatTraceparent(sc.TraceID(), sc.SpanID(), byte(sc.TraceFlags()&(trace.FlagsSampled|trace.FlagsRandom)))
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
