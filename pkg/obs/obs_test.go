package obs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
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

// A request is counted under the status it went out with: not a second
// status written once the body began (net/http drops it), nor an
// informational 1xx that came before the answer.
func TestHTTPMetricsCountTheStatusSent(t *testing.T) {
	reg := NewRegistry()
	m := NewHTTPMetrics(reg, "agents")
	r := mux.NewRouter()
	r.Use(m.Middleware)
	r.HandleFunc("/late-error", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("partial"))
		w.WriteHeader(http.StatusInternalServerError)
	})
	r.HandleFunc("/early-hints", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusEarlyHints)
		_, _ = w.Write([]byte("body"))
	})
	r.HandleFunc("/created", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusCreated)
		w.WriteHeader(http.StatusConflict)
	})
	for path, want := range map[string]string{"/late-error": "200", "/early-hints": "200", "/created": "201"} {
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if got := testutil.ToFloat64(m.requests.WithLabelValues("GET", path, want)); got != 1 {
			t.Errorf("%s: %v requests counted as %s (the recorder answered %d)", path, got, want, rec.Code)
		}
	}
}

func TestServeMetrics(t *testing.T) {
	addr := testkit.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var storeDown atomic.Bool
	storeDown.Store(true)
	probes := Probes{Live: map[string]Check{"nats": func(context.Context) error { return nil }},
		Ready: map[string]Check{"store": func(context.Context) error {
			if storeDown.Load() {
				return errors.New("store down")
			}
			return nil
		}}}
	go func() { done <- ServeMetrics(ctx, addr, NewRegistry(), probes, slog.New(slog.DiscardHandler)) }()
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
	probe := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := probe("/healthz"); code != 200 || !strings.Contains(body, `"ok"`) {
		t.Errorf("/healthz = %d %s", code, body)
	}
	if code, body := probe("/readyz"); code != 503 || !strings.Contains(body, `"store":"store down"`) {
		t.Errorf("/readyz with the store down = %d %s", code, body)
	}
	storeDown.Store(false)
	if code, body := probe("/readyz"); code != 200 || !strings.Contains(body, `"ready":true`) {
		t.Errorf("/readyz healed = %d %s", code, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestMetricsOff(t *testing.T) {
	if err := ServeMetrics(context.Background(), MetricsOff, NewRegistry(), Probes{}, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("off must return at once without error: %v", err)
	}
}

func TestLoggerTruncatesLongValues(t *testing.T) {
	var buf bytes.Buffer
	log := NewLogger(&buf, slog.LevelInfo, "svc")
	long := strings.Repeat("é", 3000)
	log.Error("bad id", "path", "/v1/x/"+long, "err", errors.New(long), "stack", long)
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"path", "err"} {
		v, _ := line[k].(string)
		if len(v) > MaxLogValue+32 || !strings.HasSuffix(v, "bytes)") || !utf8.ValidString(v) {
			t.Errorf("%s logged as %d bytes: %.40q…", k, len(v), v)
		}
	}
	if s, _ := line["stack"].(string); s != long {
		t.Error("a panic stack must be logged whole")
	}
	if strings.Count(buf.String(), `"service"`) != 1 {
		t.Errorf("key service repeated: %s", buf.String()[:80])
	}
}

// A duration is logged with its unit, not as bare nanoseconds.
func TestLoggerWritesDurationsWithTheirUnit(t *testing.T) {
	var buf bytes.Buffer
	NewLogger(&buf, slog.LevelInfo, "svc").Info("replayed", "took", 10922333*time.Nanosecond)
	if !strings.Contains(buf.String(), `"took":"10.922333ms"`) {
		t.Fatalf("logged %s", buf.String())
	}
}

// Probes served before a process has its checks answer alive and not
// ready, then what the checks say.
func TestLaterProbesAnswerWhileStarting(t *testing.T) {
	later := NewLater(Probes{Ready: map[string]Check{"started": NotYet("starting")}})
	answer := func(h http.Handler) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		return rec.Code, rec.Body.String()
	}
	if code, _ := answer(later.LiveHandler()); code != http.StatusOK {
		t.Fatalf("/healthz while starting: %d", code)
	}
	if code, body := answer(later.ReadyHandler()); code != http.StatusServiceUnavailable || !strings.Contains(body, `"started":"starting"`) {
		t.Fatalf("/readyz while starting: %d %s", code, body)
	}
	later.Set(Probes{Ready: map[string]Check{"store": func(context.Context) error { return nil }}})
	if code, body := answer(later.ReadyHandler()); code != http.StatusOK || !strings.Contains(body, `"store":"ok"`) {
		t.Fatalf("/readyz once started: %d %s", code, body)
	}
}

// A process serving one service twice (the all-in-one with two embedded
// runners) starts, and both count into the same series.
func TestHTTPMetricsOfOneServiceTwiceInAProcessShareTheirSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	for range 2 {
		r := mux.NewRouter()
		r.Use(NewHTTPMetrics(reg, "twice").Middleware)
		r.HandleFunc("/x", func(http.ResponseWriter, *http.Request) {})
		r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/x", nil))
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "voiceai_http_requests_total" {
			if len(f.GetMetric()) != 1 || f.GetMetric()[0].GetCounter().GetValue() != 2 {
				t.Fatalf("requests: %v", f.GetMetric())
			}
			return
		}
	}
	t.Fatal("no voiceai_http_requests_total")
}
