package otlp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/voiceai-platform/voiceai/pkg/tracing"
)

// Without OTEL_EXPORTER_OTLP_ENDPOINT no span is recorded (the trace
// context still flows); with it, spans reach the collector by OTLP/HTTP,
// named by service.
func TestSpansAreExportedOnlyWhenAnEndpointIsSet(t *testing.T) {
	var mu sync.Mutex
	var bodies [][]byte
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		if r.URL.Path == "/v1/traces" {
			bodies = append(bodies, b)
		}
		mu.Unlock()
	}))
	defer collector.Close()
	defer otel.SetTracerProvider(noop.NewTracerProvider())

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	shutdown, err := Setup(context.Background(), "off", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, span := tracing.Start(context.Background(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "unrecorded", trace.SpanKindServer)
	if span.IsRecording() || tracing.Traceparent(ctx) == "" || trace.SpanContextFromContext(ctx).TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("without an endpoint: recording %v, traceparent %q", span.IsRecording(), tracing.Traceparent(ctx))
	}
	span.End()
	_ = shutdown(context.Background())

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	shutdown, err = Setup(context.Background(), "exported", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	_, span = tracing.Start(context.Background(), "", "the exported span", trace.SpanKindServer)
	if !span.IsRecording() {
		t.Fatal("with an endpoint the span is not recorded")
	}
	span.End()
	if err := shutdown(context.Background()); err != nil { // flushes the batch
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	all := bytes.Join(bodies, nil)
	if !bytes.Contains(all, []byte("the exported span")) || !bytes.Contains(all, []byte("voiceai-exported")) || bytes.Contains(all, []byte("unrecorded")) {
		t.Fatalf("the collector got %d requests: %q", len(bodies), all)
	}
}

// An endpoint that is no http(s) URL stops the process at start, named;
// the SDK's errors reach the process's log, not the standard logger.
func TestAnEndpointIsCheckedAndExportErrorsAreLogged(t *testing.T) {
	for _, bad := range []string{"notaurl", "collector:4318", "grpc://collector:4317"} {
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", bad)
		if _, err := Setup(context.Background(), "bad", slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_ENDPOINT") {
			t.Errorf("%q: %v, want refused by name", bad, err)
		}
	}
	var logs bytes.Buffer
	handle := exportErrors(slog.New(slog.NewJSONHandler(&logs, nil)), time.Hour)
	handle(errors.New("traces export: failed to send: 404"))
	handle(errors.New("traces export: failed to send: 404"))
	if n := strings.Count(logs.String(), "\n"); n != 1 || !strings.Contains(logs.String(), `"err":"traces export: failed to send: 404"`) {
		t.Fatalf("two errors within the interval logged as %q, want one JSON line", logs.String())
	}
}
