package obs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/pkg/obs"
	"github.com/voiceai-platform/voiceai/pkg/tracing"
)

const (
	testTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	testSpanID  = "00f067aa0ba902b7"
	testParent  = "00-" + testTraceID + "-" + testSpanID + "-01"
)

// oneLine decodes the single JSON line in buf.
func oneLine(t *testing.T, buf *bytes.Buffer) map[string]any {
	t.Helper()
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("log line %q: %v", buf.String(), err)
	}
	buf.Reset()
	return line
}

func TestLinesLoggedWithAContextNameItsTrace(t *testing.T) {
	var buf bytes.Buffer
	log := obs.NewLogger(&buf, slog.LevelInfo, "runner")

	// A message's trace, extracted without a span (what a worker does).
	log.WarnContext(tracing.Extract(context.Background(), testParent), "job failed")
	if line := oneLine(t, &buf); line["trace_id"] != testTraceID || line["span_id"] != testSpanID || line["service"] != "runner" {
		t.Errorf("line with a message's trace: %v", line)
	}
	// A span started from it: its own span id, the same trace.
	ctx, span := tracing.Start(context.Background(), testParent, "job", 0)
	log.InfoContext(ctx, "started")
	span.End()
	if line := oneLine(t, &buf); line["trace_id"] != testTraceID || line["span_id"] == nil {
		t.Errorf("line in a span: %v", line)
	}
	// Only the traceparent a request passes on.
	log.InfoContext(tracing.WithRequestTrace(context.Background(), testParent), "projected")
	if line := oneLine(t, &buf); line["trace_id"] != testTraceID {
		t.Errorf("line with a request's traceparent: %v", line)
	}
	// No trace, or no context: nothing added.
	log.InfoContext(context.Background(), "idle")
	log.Info("idle")
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if strings.Contains(l, "trace_id") || strings.Contains(l, "span_id") {
			t.Errorf("line without a trace names one: %s", l)
		}
	}
	buf.Reset()
	// A malformed traceparent is no trace.
	log.InfoContext(tracing.WithRequestTrace(context.Background(), "00-nothex"), "odd")
	if line := oneLine(t, &buf); line["trace_id"] != nil {
		t.Errorf("malformed traceparent logged as a trace: %v", line)
	}
}

func TestATraceIsNeverNamedTwice(t *testing.T) {
	var buf bytes.Buffer
	log := obs.NewLogger(&buf, slog.LevelInfo, "svc")
	ctx := tracing.Extract(context.Background(), testParent)

	log.With("trace_id", "own").InfoContext(ctx, "request logger")
	log.InfoContext(ctx, "record names it", "trace_id", "own")
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if strings.Count(l, `"trace_id"`) != 1 || !strings.Contains(l, `"trace_id":"own"`) || strings.Contains(l, "span_id") {
			t.Errorf("line with its own trace_id: %s", l)
		}
	}
	buf.Reset()

	// A request's logger (httpx) names the trace itself; the handler adds
	// no second one to its lines, with or without their context.
	h := httpx.WithRequestID(log, httpx.WithTraceparent(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		httpx.LoggerFrom(r.Context()).InfoContext(r.Context(), "with context")
		httpx.LoggerFrom(r.Context()).Info("without")
	})))
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("traceparent", testParent)
	h.ServeHTTP(httptest.NewRecorder(), req)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("request lines: %q", lines)
	}
	for _, l := range lines {
		if strings.Count(l, `"trace_id"`) != 1 || !strings.Contains(l, `"trace_id":"`+testTraceID+`"`) {
			t.Errorf("request line: %s", l)
		}
	}
}

func TestTraceHandlerUnderAGroup(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(obs.TraceHandler(slog.NewJSONHandler(&buf, nil)))
	ctx := tracing.Extract(context.Background(), testParent)
	log.WithGroup("g").InfoContext(ctx, "grouped")
	line := oneLine(t, &buf)
	if g, _ := line["g"].(map[string]any); g["trace_id"] != testTraceID {
		t.Errorf("grouped line: %v", line)
	}
	// A logger given its own trace_id, in a group or not, keeps it alone.
	log.WithGroup("g").With("trace_id", "own").InfoContext(ctx, "grouped")
	if l := buf.String(); strings.Count(l, `"trace_id"`) != 1 {
		t.Errorf("grouped line with its own trace_id: %s", l)
	}
}
