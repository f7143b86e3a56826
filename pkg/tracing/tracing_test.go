package tracing

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

var traceparents = []string{
	"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
	"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00",
	"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-02",
	"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-03",
	"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-04", // a reserved flag bit
	"00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01", // upper case
	"00-00000000000000000000000000000000-b7ad6b7169203331-01", // no trace id
	"00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01", // no span id
	"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
	"01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra", // a later version may add fields
	"ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
	"00-0af7651916cd43dd8448eb211c80319g-b7ad6b7169203331-01",
	"00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
	"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
	"garbage",
	"",
}

// propagatorContext is ctx as the W3C propagator reads traceparent into it.
func propagatorContext(traceparent string) trace.SpanContext {
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent})
	return trace.SpanContextFromContext(ctx)
}

// propagatorTraceparent is what the W3C propagator writes of ctx.
func propagatorTraceparent(ctx context.Context) string {
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"]
}

// Extract and Traceparent read and write what the W3C propagator does,
// for well-formed traceparents and every kind of malformed one.
func TestTraceparentsReadAndWrittenAsThePropagatorDoes(t *testing.T) {
	for _, tp := range traceparents {
		sameAsThePropagator(t, tp)
	}
}

func FuzzTraceparentsAsThePropagator(f *testing.F) {
	for _, tp := range traceparents {
		f.Add(tp)
	}
	f.Fuzz(sameAsThePropagator)
}

func sameAsThePropagator(t *testing.T, tp string) {
	ctx := Extract(context.Background(), tp)
	got, want := trace.SpanContextFromContext(ctx), propagatorContext(tp)
	if !got.Equal(want) || got.IsRemote() != want.IsRemote() {
		t.Fatalf("Extract(%q) = %+v, the propagator reads %+v", tp, got, want)
	}
	if got, want := Traceparent(ctx), propagatorTraceparent(ctx); got != want {
		t.Fatalf("Traceparent after Extract(%q) = %q, the propagator writes %q", tp, got, want)
	}
}

// A span started under a traceparent continues its trace, and what it
// passes on names the span.
func TestAStartedSpanContinuesTheTrace(t *testing.T) {
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	ctx, span := Start(context.Background(), tp, "op", trace.SpanKindServer)
	defer span.End()
	// No SDK is installed: the span is the remote parent's context, passed on.
	if got := Traceparent(ctx); got != tp {
		t.Fatalf("passed on %q, want %q", got, tp)
	}
	if id, _ := IDs(WithRequestTrace(context.Background(), tp)); id != "0af7651916cd43dd8448eb211c80319c" {
		t.Fatalf("IDs of a request trace: %q", id)
	}
}

// A hop keeps a traceparent of the W3C shape (any version, lower-case
// hex) and starts a trace in place of anything else; what it keeps names
// its trace id and can be marked unsampled.
func TestWellFormedTraceparents(t *testing.T) {
	malformed := map[string]bool{}
	for _, i := range []int{5, 8, 9, 11, 12, 13, 14, 15} { // upper case, extra fields, a non-hex digit, '_', short, garbage, ""
		malformed[traceparents[i]] = true
	}
	// The rest have the shape, all-zero ids and version ff included (the
	// propagator then refuses them: a new span starts a trace).
	for _, tp := range traceparents {
		if got := WellFormed(tp); got == malformed[tp] {
			t.Errorf("WellFormed(%q) = %v", tp, got)
		}
	}
	tp := NewTraceparent()
	if !WellFormed(tp) || tp[len(tp)-3:] != "-01" {
		t.Fatalf("a new trace %q: want well-formed and sampled", tp)
	}
	if TraceID(traceparents[0]) != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("trace id %q", TraceID(traceparents[0]))
	}
	if got := Unsampled(traceparents[0]); got != "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00" {
		t.Errorf("unsampled %q", got)
	}
}

// With no provider installed, Start's span is what OpenTelemetry's
// stand-in makes: the parent's trace context, recording nothing, and so
// the same traceparent passed on.
func TestStartWithoutAProviderIsTheStandIns(t *testing.T) {
	if installed() {
		t.Fatal("a provider is installed before any test installed one")
	}
	parent := Extract(context.Background(), traceparents[0])
	for _, tp := range traceparents {
		for _, ctx := range []context.Context{context.Background(), parent} {
			got, span := Start(ctx, tp, "request", trace.SpanKindServer)
			want, standInSpan := standIn.Tracer("test").Start(Extract(ctx, tp), "request", trace.WithSpanKind(trace.SpanKindServer))
			if span.IsRecording() || standInSpan.IsRecording() {
				t.Fatalf("%q: a span records with no provider installed", tp)
			}
			if g, w := trace.SpanContextFromContext(got), trace.SpanContextFromContext(want); !g.Equal(w) {
				t.Errorf("%q: span context %v, the stand-in's %v", tp, g, w)
			}
			if g, w := span.SpanContext(), standInSpan.SpanContext(); !g.Equal(w) {
				t.Errorf("%q: span's context %v, the stand-in's %v", tp, g, w)
			}
			if g, w := Traceparent(got), Traceparent(want); g != w {
				t.Errorf("%q: passes on %q, the stand-in %q", tp, g, w)
			}
		}
	}
}
