package docstore

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestLazyAttrsPrintsWhatTheTextHandlerWould(t *testing.T) {
	var direct, lazy bytes.Buffer
	opts := &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}
	log := func(l *slog.Logger) {
		l.With("sql", "INSERT ...", "n", 2).WithGroup("g").With("x", 1).Error("failed", "err", "boom")
		l.With("dropped", true).Debug("not enabled")
	}
	log(slog.New(slog.NewTextHandler(&direct, opts)))
	log(slog.New(lazyAttrs{inner: slog.NewTextHandler(&lazy, opts)}))
	if lazy.String() != direct.String() || !strings.Contains(lazy.String(), `sql="INSERT ..."`) {
		t.Fatalf("lazy handler printed\n%q\nthe text handler\n%q", lazy.String(), direct.String())
	}
}
