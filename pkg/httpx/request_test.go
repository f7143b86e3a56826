package httpx

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/voiceai-platform/voiceai/pkg/obs"
)

const someTraceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

// jsonLines are the JSON log lines in buf.
func jsonLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON line: %q", l)
		}
		out = append(out, m)
	}
	return out
}

// What a handler logs through LoggerFrom, and the access-log line, carry
// the request id and the trace id once each; the access-log line has what
// inner handlers noted (route, client, caller).
func TestRequestLinesCarryTheRequestAndItsTrace(t *testing.T) {
	var buf bytes.Buffer
	base := slog.New(slog.NewJSONHandler(&buf, nil))
	h := WithRequestID(base, WithTraceparent(Recover(AccessLog(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		NoteRoute(r.Context(), "/v1/things/{id}")
		NoteClient(r.Context(), "192.0.2.7")
		NoteCaller(r.Context(), "ws_1", "key_1")
		LoggerFrom(r.Context()).Info("handled")
		w.WriteHeader(http.StatusCreated)
	})))))
	r := httptest.NewRequest(http.MethodPost, "/v1/things/t_1", nil)
	r.Header.Set(HeaderRequestID, "req_given")
	r.Header.Set(HeaderTraceparent, someTraceparent)
	h.ServeHTTP(httptest.NewRecorder(), r)

	lines := jsonLines(t, &buf)
	if len(lines) != 2 {
		t.Fatalf("want the handler's line and the access-log line, got %d:\n%s", len(lines), buf.String())
	}
	for _, l := range lines {
		if l["request_id"] != "req_given" || l["trace_id"] != "0af7651916cd43dd8448eb211c80319c" {
			t.Fatalf("a line without the request's ids: %v", l)
		}
	}
	if raw := buf.String(); strings.Count(raw, `"trace_id"`) != 2 || strings.Count(raw, `"request_id"`) != 2 {
		t.Fatalf("an id twice on a line:\n%s", raw)
	}
	access := lines[1]
	want := map[string]any{"msg": "http request", "method": "POST", "route": "/v1/things/{id}", "status": float64(201),
		"client_ip": "192.0.2.7", "workspace_id": "ws_1", "key_id": "key_1"}
	for k, v := range want {
		if access[k] != v {
			t.Fatalf("access-log line: %s = %v, want %v (%v)", k, access[k], v, access)
		}
	}
}

// A logger already handed out before the trace is known (a middleware
// that logs early) still carries the trace id in what is logged after.
func TestATraceIDReachesALoggerBuiltBefore(t *testing.T) {
	var buf bytes.Buffer
	h := WithRequestID(slog.New(slog.NewJSONHandler(&buf, nil)), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		LoggerFrom(r.Context()).Info("early")
		WithTraceparent(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			LoggerFrom(r.Context()).Info("late")
		})).ServeHTTP(w, r)
	}))
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set(HeaderTraceparent, someTraceparent)
	h.ServeHTTP(httptest.NewRecorder(), r)
	lines := jsonLines(t, &buf)
	if len(lines) != 2 || lines[0]["trace_id"] != nil || lines[1]["trace_id"] != "0af7651916cd43dd8448eb211c80319c" || lines[1]["request_id"] == nil {
		t.Fatalf("lines: %v", lines)
	}
}

// Outside any request, and behind only some of the middlewares, the
// logger is the default one, with what is known.
func TestLoggerFromWithoutTheChain(t *testing.T) {
	if LoggerFrom(t.Context()) != slog.Default() {
		t.Fatal("outside a request: not the default logger")
	}
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	h := WithTraceparent(AccessLog(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	r := httptest.NewRequest(http.MethodGet, "/x", nil)
	r.Header.Set(HeaderTraceparent, someTraceparent)
	h.ServeHTTP(httptest.NewRecorder(), r)
	lines := jsonLines(t, &buf)
	if len(lines) != 1 || lines[0]["trace_id"] != "0af7651916cd43dd8448eb211c80319c" || lines[0]["path"] != "/x" {
		t.Fatalf("lines: %v", lines)
	}
}

func TestWellFormedRequestIDs(t *testing.T) {
	for id, want := range map[string]bool{
		"req_0123456789abcdef":   true,
		"A.b_c:d-e":              true,
		strings.Repeat("a", 128): true,
		strings.Repeat("a", 129): false,
		"":                       false,
		"with space":             false,
		"slash/":                 false,
		"ümlaut":                 false,
		"new\nline":              false,
		"semi;colon":             false,
	} {
		if got := wellFormedRequestID(id); got != want {
			t.Errorf("wellFormedRequestID(%q) = %v, want %v", id, got, want)
		}
	}
}

// The middlewares of one request wrap its writer once between them.
func TestTheMiddlewaresShareOneStatusWriter(t *testing.T) {
	var seen http.ResponseWriter
	h := WithRequestID(slog.New(slog.DiscardHandler), WithTraceparent(Recover(AccessLog(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		seen = w
	})))))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	sw, ok := seen.(*obs.Recorder)
	if !ok || sw.ResponseWriter != rec {
		t.Fatalf("the handler writes to %T, not one status writer over the response", seen)
	}
}

// useTracer makes provider the global tracer provider until the test
// ends, then the no-op one again.
func useTracer(t *testing.T, provider *sdktrace.TracerProvider) {
	otel.SetTracerProvider(provider)
	t.Cleanup(func() {
		otel.SetTracerProvider(noop.NewTracerProvider())
		_ = provider.Shutdown(context.Background())
	})
}

// A recorded server span carries the request's method, path and status.
func TestARecordedSpanCarriesTheRequest(t *testing.T) {
	exporter := tracetest.NewInMemoryExporter()
	useTracer(t, sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter)))
	h := WithTraceparent(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPut, "/v1/things/t_1", nil))
	spans := exporter.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans recorded", len(spans))
	}
	got := map[string]string{}
	for _, a := range spans[0].Attributes {
		got[string(a.Key)] = a.Value.String()
	}
	want := map[string]string{"http.request.method": "PUT", "url.path": "/v1/things/t_1", "http.response.status_code": "418"}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("span attribute %s = %q, want %q (%v)", k, got[k], v, got)
		}
	}
}
