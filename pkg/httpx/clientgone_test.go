package httpx

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/voiceai-platform/voiceai/pkg/obs"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

// A request whose client hung up before any answer went out is logged
// and counted as 499, not as the 200 of a handler that wrote nothing: an
// outage whose clients all time out must not read as a run of successes.
func TestARequestItsClientLeftIsLoggedAndCounted499(t *testing.T) {
	var logs testkit.LogBuffer
	reg := prometheus.NewRegistry()
	metrics := obs.NewHTTPMetrics(reg, "test")
	router := mux.NewRouter()
	router.Use(metrics.Middleware)
	router.HandleFunc("/v1/slow", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	handler := WithRequestID(slog.New(slog.NewTextHandler(&logs, nil)), AccessLog(router))

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the client is gone before the handler answers
	handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/v1/slow", nil).WithContext(ctx))
	if out := logs.String(); !strings.Contains(out, "status=499") || !strings.Contains(out, `cut_short="client went away"`) {
		t.Fatalf("logged %s", out)
	}
	if n := countOf(t, reg, "499"); n != 1 {
		t.Fatalf("counted %v requests with status 499, want 1", n)
	}
}

// countOf is voiceai_http_requests_total's count of requests answered
// status, from reg.
func countOf(t *testing.T, reg *prometheus.Registry, status string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if f.GetName() == "voiceai_http_requests_total" && l.GetName() == "status" && l.GetValue() == status {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}
