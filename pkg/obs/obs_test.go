package obs

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestLoggerWritesJSONWithService(t *testing.T) {
	var buf bytes.Buffer
	NewLogger(&buf, slog.LevelInfo, "gateway").Info("hello", "request_id", "req_1")
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil || line["service"] != "gateway" || line["request_id"] != "req_1" {
		t.Fatalf("log line %s: %v", buf.String(), err)
	}
}

func TestHTTPMetricsLabelByRouteTemplate(t *testing.T) {
	reg := NewRegistry()
	m := NewHTTPMetrics(reg, "agents")
	r := mux.NewRouter()
	r.Use(m.Middleware)
	r.HandleFunc("/v1/agents/{id}", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	for _, id := range []string{"a", "b", "c"} {
		r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/v1/agents/"+id, nil))
	}
	if got := testutil.ToFloat64(m.requests.WithLabelValues("GET", "/v1/agents/{id}", "418")); got != 3 {
		t.Fatalf("counted %v requests under the route template, want 3", got)
	}
}

func TestServeMetrics(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeMetrics(ctx, addr, NewRegistry()) }()
	deadline := time.Now().Add(5 * time.Second)
	var body []byte
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err == nil {
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(string(body), "go_goroutines") {
		t.Fatalf("metrics endpoint: %.200s", body)
	}
	resp, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "goroutine profile") {
		t.Fatalf("profiler endpoint: %d %.200s", resp.StatusCode, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestMetricsOff(t *testing.T) {
	if err := ServeMetrics(context.Background(), MetricsOff, NewRegistry()); err != nil {
		t.Fatalf("off must return at once without error: %v", err)
	}
}
