package docstore

import (
	"context"
	"log/slog"
)

// lazyAttrs defers a handler's WithAttrs until a record is actually
// handled. FerretDB derives a logger with the SQL text for every statement
// it runs; slog's text handler formats those attributes at once, which
// cost a twentieth of the platform's CPU under write load although only
// errors are ever printed.
type lazyAttrs struct {
	inner   slog.Handler
	pending []slog.Attr
}

func (h lazyAttrs) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

func (h lazyAttrs) Handle(ctx context.Context, r slog.Record) error {
	return h.materialize().Handle(ctx, r)
}

func (h lazyAttrs) WithAttrs(attrs []slog.Attr) slog.Handler {
	pending := make([]slog.Attr, 0, len(h.pending)+len(attrs))
	return lazyAttrs{inner: h.inner, pending: append(append(pending, h.pending...), attrs...)}
}

func (h lazyAttrs) WithGroup(name string) slog.Handler {
	return lazyAttrs{inner: h.materialize().WithGroup(name)}
}

func (h lazyAttrs) materialize() slog.Handler {
	if len(h.pending) == 0 {
		return h.inner
	}
	return h.inner.WithAttrs(h.pending)
}
