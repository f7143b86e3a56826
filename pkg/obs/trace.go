package obs

import (
	"context"
	"log/slog"

	"github.com/voiceai-platform/voiceai/pkg/tracing"
)

// Log attributes naming the trace a line belongs to.
const (
	TraceIDKey = "trace_id"
	SpanIDKey  = "span_id"
)

// TraceHandler wraps h so that a record logged with a context (InfoContext
// and the like) names the context's trace: trace_id and span_id of its
// span, or of the traceparent it carries (see package tracing). A worker
// logging about a message with the message's context, or a service
// logging during a request with its base logger, is then tied to the
// trace like the request's own lines. A logger that carries trace_id
// already (a request's logger, see httpx.WithTraceparent), or a record
// that names it, keeps its own: a line never has it twice. Under a group
// (WithGroup; the platform's loggers have none) the ids are logged in the
// group.
func TraceHandler(h slog.Handler) slog.Handler { return traceHandler{inner: h} }

type traceHandler struct {
	inner slog.Handler
	named bool // a trace_id was added by WithAttrs
}

func (h traceHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

func (h traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if !h.named && ctx != nil {
		if traceID, spanID := tracing.IDs(ctx); traceID != "" && !namesTrace(r) {
			r.AddAttrs(slog.String(TraceIDKey, traceID), slog.String(SpanIDKey, spanID))
		}
	}
	return h.inner.Handle(ctx, r)
}

func (h traceHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	named := h.named
	for _, a := range attrs {
		named = named || a.Key == TraceIDKey
	}
	return traceHandler{inner: h.inner.WithAttrs(attrs), named: named}
}

func (h traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{inner: h.inner.WithGroup(name), named: h.named}
}

// namesTrace reports whether the record has a trace_id of its own.
func namesTrace(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		found = a.Key == TraceIDKey
		return !found
	})
	return found
}
