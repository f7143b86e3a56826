package otlp

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

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
	shutdown, err := Setup(context.Background(), "off")
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
	shutdown, err = Setup(context.Background(), "exported")
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
