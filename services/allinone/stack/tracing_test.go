package stack

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// A request is one trace from the gateway, across NATS, into the service
// that serves it and the events it causes, on to the runner that runs
// what it invoked; every log line of the request names the trace.
func TestSpansFollowARequestAcrossNATS(t *testing.T) {
	// Not in parallel with the other tests: it sets the process's tracer, which the other tests' stacks would use.
	spans := tracetest.NewInMemoryExporter()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans)))
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })

	s, logs := startLogging(t, slog.LevelInfo, localHooks)

	const traceID, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	r := call(t, s, "POST", "/v1/convai/agents/create", adminKey, `{"name":"traced"}`, "traceparent", "00-"+traceID+"-"+callerSpan+"-01")
	agent, _ := r.JSON(t)["agent_id"].(string)
	var gateway, service sdktrace.ReadOnlySpan
	eventually(t, 10*time.Second, "the gateway's and the service's spans end", func() bool {
		for _, sp := range spans.GetSpans().Snapshots() {
			if sp.SpanContext().TraceID().String() != traceID || sp.Name() != "POST /v1/convai/agents/create" {
				continue
			}
			if sp.Parent().SpanID().String() == callerSpan {
				gateway = sp
			} else {
				service = sp
			}
		}
		return gateway != nil && service != nil
	})
	if service.Parent().SpanID() != gateway.SpanContext().SpanID() || gateway.SpanKind() != trace.SpanKindServer {
		t.Fatalf("the service's span is not the gateway's child: service parent %s, gateway %s", service.Parent().SpanID(), gateway.SpanContext().SpanID())
	}
	wantAttrs(t, gateway, map[string]string{"http.request.method": "POST", "url.path": "/v1/convai/agents/create", "http.response.status_code": "201"})

	// The event carries the service span's context on.
	msg := lastAgentEvent(t, s, agent)
	if want := "00-" + traceID + "-" + service.SpanContext().SpanID().String() + "-01"; msg.Header.Get("traceparent") != want {
		t.Fatalf("event traceparent %q, want %q", msg.Header.Get("traceparent"), want)
	}
	// The request is logged once at info, by the gateway, naming its
	// route, workspace, key and trace.
	var lines []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `msg="http request"`) && strings.Contains(l, "trace_id="+traceID) {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "route=/v1/convai/agents/create") ||
		!strings.Contains(lines[0], "workspace_id=ws_default") || !strings.Contains(lines[0], "key_id=") || !strings.Contains(lines[0], "request_id=") {
		t.Fatalf("want one access line with route, workspace, key, request and trace ids, got %q", lines)
	}

	// Tests it invokes run in its trace: the runner's job span.
	r = call(t, s, "POST", "/v1/convai/agent-testing/create", adminKey, hoursTest)
	test, _ := r.JSON(t)["id"].(string)
	const runTrace = "0af7651916cd43dd8448eb211c80319c"
	r = call(t, s, "POST", "/v1/convai/agents/"+agentWith(t, s)+"/run-tests", adminKey, `{"tests":[{"test_id":"`+test+`"}]}`,
		"traceparent", "00-"+runTrace+"-b7ad6b7169203331-01")
	if r.Code != 200 {
		t.Fatalf("run-tests: %d %s", r.Code, r.Body)
	}
	eventually(t, 30*time.Second, "the runner's span joins the trace", func() bool { return hasSpan(spans, runTrace, "run job", trace.SpanKindConsumer) })
	wantAttrs(t, spanNamed(spans, runTrace, "run job"), map[string]string{"voiceai.delivery": "1"})
	// …as a descendant of the gateway's span: every link from the runner
	// up to the caller's span was recorded (gateway → service → runner).
	chain := ancestry(spans, runTrace, "run job")
	if len(chain) < 3 || chain[len(chain)-1] != "POST /v1/convai/agents/{agent_id}/run-tests" {
		t.Fatalf("the runner's span does not lead up to the gateway's: %q", chain)
	}

	// An ingested event's webhook delivery is a client span of its trace,
	// and the receiver is handed the trace to join.
	received := make(chan string, 1)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case received <- r.Header.Get("Traceparent"):
		default:
		}
	}))
	t.Cleanup(rcv.Close)
	createWebhook(t, s, `{"url":"`+rcv.URL+`/hook","events":["call_started"]}`)
	const eventTrace = "11112222333344445555666677778888"
	if r := call(t, s, "POST", "/v1/convai/events", adminKey, `{"event":"call_started","data":{"call_id":"c1"}}`,
		"traceparent", "00-"+eventTrace+"-1111222233334444-01"); r.Code != 202 {
		t.Fatalf("ingest: %d %s", r.Code, r.Body)
	}
	select {
	case tp := <-received:
		if !strings.HasPrefix(tp, "00-"+eventTrace+"-") {
			t.Fatalf("the receiver got traceparent %q, want one of trace %s", tp, eventTrace)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no delivery")
	}
	eventually(t, 10*time.Second, "the delivery's span joins the trace", func() bool {
		return hasSpan(spans, eventTrace, "webhook delivery", trace.SpanKindClient)
	})
	wantAttrs(t, spanNamed(spans, eventTrace, "webhook delivery"), map[string]string{"voiceai.event": "call_started", "voiceai.attempt": "1", "http.response.status_code": "200"})

	// A ticket the QA worker raises from a conversation event is in the
	// event's trace, under the request that ingested it.
	const qaTrace = "99998888777766665555444433332222"
	body := `{"event":"conversation_ended","data":{"conversation_id":"conv_traced","agent_id":"` + agent +
		`","sentiment_analysis":{"overall_sentiment":"negative","sentiment_score":-0.8}}}`
	if r := call(t, s, "POST", "/v1/convai/events", adminKey, body, "traceparent", "00-"+qaTrace+"-9999888877776666-01"); r.Code != 202 {
		t.Fatalf("ingest: %d %s", r.Code, r.Body)
	}
	eventually(t, 30*time.Second, "the QA worker's span joins the trace", func() bool {
		return hasSpan(spans, qaTrace, "qa ticket from conversation", trace.SpanKindConsumer)
	})
	if chain := ancestry(spans, qaTrace, "qa ticket from conversation"); len(chain) < 3 || chain[len(chain)-1] != "POST /v1/convai/events" {
		t.Fatalf("the QA worker's span does not lead up to the ingesting request's: %q", chain)
	}
}

// ancestry names the span called name of the trace and each recorded
// ancestor of it, up to the one whose parent was not recorded (the
// caller's).
func ancestry(spans *tracetest.InMemoryExporter, traceID, name string) []string {
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	var sp sdktrace.ReadOnlySpan
	for _, s := range spans.GetSpans().Snapshots() {
		if s.SpanContext().TraceID().String() == traceID {
			byID[s.SpanContext().SpanID()] = s
			if s.Name() == name {
				sp = s
			}
		}
	}
	var chain []string
	for ; sp != nil && len(chain) < 32; sp = byID[sp.Parent().SpanID()] {
		chain = append(chain, sp.Name())
	}
	return chain
}

// spanNamed is the recorded span of the trace called name (nil: none).
func spanNamed(spans *tracetest.InMemoryExporter, traceID, name string) sdktrace.ReadOnlySpan {
	for _, sp := range spans.GetSpans().Snapshots() {
		if sp.SpanContext().TraceID().String() == traceID && sp.Name() == name {
			return sp
		}
	}
	return nil
}

// wantAttrs fails unless sp has each of want's attributes, with its value.
func wantAttrs(t *testing.T, sp sdktrace.ReadOnlySpan, want map[string]string) {
	t.Helper()
	if sp == nil {
		t.Fatal("no such span")
	}
	got := map[string]string{}
	for _, a := range sp.Attributes() {
		got[string(a.Key)] = a.Value.String()
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("span %q: %s = %q, want %q (all: %v)", sp.Name(), k, got[k], v, got)
		}
	}
}

func hasSpan(spans *tracetest.InMemoryExporter, traceID, name string, kind trace.SpanKind) bool {
	for _, sp := range spans.GetSpans().Snapshots() {
		if sp.SpanContext().TraceID().String() == traceID && sp.Name() == name && sp.SpanKind() == kind {
			return true
		}
	}
	return false
}
