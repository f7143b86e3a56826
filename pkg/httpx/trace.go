package httpx

import (
	"context"
	"log/slog"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/voiceai-platform/voiceai/pkg/obs"
	"github.com/voiceai-platform/voiceai/pkg/tracing"
)

// HeaderTraceparent is the W3C trace-context header.
const HeaderTraceparent = "Traceparent"

// WithTraceparent keeps a well-formed incoming traceparent, or starts a
// trace, so every event a request causes can be tied back to it; serves
// the request in a server span, child of that trace context (see package
// tracing), whose traceparent is what the request passes on (forwarded
// requests, events); and names the trace in the request's log lines.
//
// A trace it starts is sampled only if its span is recorded: with no
// tracer installed, nobody records it, and saying so keeps the services'
// samplers consistent and spares the NATS server, which reads every
// header of a message whose traceparent is sampled.
func WithTraceparent(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tp := r.Header.Get(HeaderTraceparent)
		started := !tracing.WellFormed(tp)
		if started {
			tp = tracing.NewTraceparent()
		}
		ctx, span := tracing.Start(r.Context(), tp, r.Method, trace.SpanKindServer)
		defer span.End()
		if span.IsRecording() { // else the attributes would be made for nobody, twice a request
			span.SetAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", clip(r.URL.Path)))
		}
		if own := tracing.Traceparent(ctx); own != "" {
			tp = own
		}
		if started && !span.IsRecording() {
			tp = tracing.Unsampled(tp)
		}
		if r.Header.Get(HeaderTraceparent) != tp {
			r.Header.Set(HeaderTraceparent, tp)
		}
		ctx = tracing.WithRequestTrace(ctx, tp)
		traceID := slog.String("trace_id", tracing.TraceID(tp))
		if q := requestOf(ctx); q != nil {
			q.addAttr(traceID)
		} else {
			ctx = context.WithValue(ctx, requestKey{}, newRequest("", nil, traceID))
		}
		sw := obs.RecorderOf(w)
		next.ServeHTTP(sw, r.WithContext(ctx))
		if span.IsRecording() {
			status := sw.StatusFor(r)
			span.SetAttributes(attribute.Int("http.response.status_code", status))
			if status >= 500 {
				span.SetStatus(codes.Error, http.StatusText(status))
			}
		}
	})
}

// WithTraceparentValue is ctx carrying traceparent for what it causes
// (events, forwarded requests), as a request's context does.
func WithTraceparentValue(ctx context.Context, traceparent string) context.Context {
	return tracing.WithRequestTrace(ctx, traceparent)
}

// Traceparent returns the request's traceparent, or "".
func Traceparent(ctx context.Context) string { return tracing.RequestTrace(ctx) }
