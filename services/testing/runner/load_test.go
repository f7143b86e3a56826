package runner

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/outbound"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"
	"github.com/voiceai-platform/voiceai/services/testing/modelclient"
	"github.com/voiceai-platform/voiceai/services/testing/offline"
)

// countingEndpoint answers a chat completion after 30 ms (or status when
// set), and records the most requests it had in flight at once.
type countingEndpoint struct {
	*httptest.Server
	now, most, total atomic.Int32
	status           int
}

func newCountingEndpoint(t *testing.T, status int) *countingEndpoint {
	e := &countingEndpoint{status: status}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := e.now.Add(1)
		defer e.now.Add(-1)
		e.total.Add(1)
		for m := e.most.Load(); n > m && !e.most.CompareAndSwap(m, n); m = e.most.Load() {
		}
		time.Sleep(30 * time.Millisecond) // the endpoint's own latency, not a wait of the test
		if e.status != 0 {
			w.WriteHeader(e.status)
			_, _ = w.Write([]byte(`{"error":{"message":"bad request"}}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"We open at nine."},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`))
	}))
	t.Cleanup(e.Close)
	return e
}

func loadJob(url string, callers, turns, limit int) LoadJob {
	cfg := `{"agent":{"first_message":"Hi","prompt":{"prompt":"p","llm":"custom-llm","custom_llm":{"url":"` + url + `","model_id":"team"}}}}`
	inv := &testingv1.Invocation{InvocationId: "tinv_1", WorkspaceId: "ws_1", AgentConfigJson: []byte(cfg)}
	return LoadJob{Run: Run{Invocation: inv, AgentConfig: []byte(cfg), WorkerID: "wrk_1"}, Step: 1, Job: 0, Callers: callers,
		TurnsPerCaller: turns, Limit: limit, LimitScope: "tinv_1#1"}
}

// A load job's callers call the endpoint together, past the endpoint's
// usual limit (2 here), on slots of the load test's own (the usual slots
// stay as they were: modelclient's TestAnEndpointLimitIsALoadTestsOwn).
// Every turn is measured:
// first token within the turn, the platform's overhead within both.
func TestALoadJobCallsPastTheEndpointsUsualLimit(t *testing.T) {
	srv := newCountingEndpoint(t, 0)
	e := endpoints()
	e.Concurrency = 2
	ex := &Executor{Model: offline.Model{}, Agents: e, Now: time.Now}
	s := ex.Load(context.Background(), loadJob(srv.URL, 12, 2, 12))
	if len(s.GetFirstTokenUs()) != 24 || len(s.GetTurnUs()) != 24 || len(s.GetOverheadUs()) != 24 || len(s.GetFailures()) != 0 {
		t.Fatalf("samples: %d first tokens, %d turns, %d overheads, failures %v", len(s.GetFirstTokenUs()), len(s.GetTurnUs()), len(s.GetOverheadUs()), s.GetFailures())
	}
	if got := srv.most.Load(); got < 6 {
		t.Fatalf("at most %d requests in flight: the load job kept to the endpoint's usual limit of 2", got)
	}
	if s.GetStartedAtUnixMs() == 0 || s.GetFinishedAtUnixMs() < s.GetStartedAtUnixMs()+60 { // two turns of 30 ms each
		t.Fatalf("the callers' span %d..%d ms", s.GetStartedAtUnixMs(), s.GetFinishedAtUnixMs())
	}
	for i, turn := range s.GetTurnUs() {
		if turn < 30_000 || s.GetFirstTokenUs()[i] > turn || s.GetOverheadUs()[i] <= 0 || s.GetOverheadUs()[i] >= turn {
			t.Fatalf("turn %d: %d µs, first token %d µs, overhead %d µs", i, turn, s.GetFirstTokenUs()[i], s.GetOverheadUs()[i])
		}
	}
}

// The operator's bound holds: with a limit of 3, 12 callers are never more
// than 3 in flight.
func TestALoadJobKeepsToItsLimit(t *testing.T) {
	srv := newCountingEndpoint(t, 0)
	ex := &Executor{Model: offline.Model{}, Agents: endpoints(), Now: time.Now}
	s := ex.Load(context.Background(), loadJob(srv.URL, 12, 1, 3))
	if len(s.GetTurnUs()) != 12 || srv.most.Load() > 3 {
		t.Fatalf("%d turns, at most %d in flight (limit 3)", len(s.GetTurnUs()), srv.most.Load())
	}
}

// Failed turns are counted by reason, none measured.
func TestALoadJobCountsFailedTurnsByReason(t *testing.T) {
	srv := newCountingEndpoint(t, http.StatusBadRequest)
	ex := &Executor{Model: offline.Model{}, Agents: endpoints(), Now: time.Now}
	s := ex.Load(context.Background(), loadJob(srv.URL, 3, 1, 3))
	if len(s.GetTurnUs()) != 0 || len(s.GetFailures()) != 1 || s.GetFailures()[0].GetCount() != 3 ||
		!strings.HasPrefix(s.GetFailures()[0].GetReason(), "agent endpoint answered with an error: ") {
		t.Fatalf("samples %v", s)
	}
	// An agent whose endpoint cannot be set up fails every turn with why.
	bad := loadJob("http://10.0.0.9/v1", 4, 2, 4)
	s = ex.Load(context.Background(), bad)
	if len(s.GetFailures()) != 1 || s.GetFailures()[0].GetCount() != 8 || !strings.Contains(s.GetFailures()[0].GetReason(), "scheme") {
		t.Fatalf("samples %v", s)
	}
}

// endpoints plays custom-llm agents through their endpoints on this
// machine, every other agent through the offline model.
func endpoints() *modelclient.Endpoints {
	return &modelclient.Endpoints{Platform: modelclient.PlatformAgents{Default: offline.Model{}}, Guard: outbound.NewGuard([]string{"127.0.0.1"})}
}

// A cancelled load test's callers start no further turns: each finishes
// the turn it is in, measured, and stops there.
func TestALoadJobsCallersStopAtTheirNextTurnOnceNotWanted(t *testing.T) {
	srv := newCountingEndpoint(t, 0)
	ex := &Executor{Model: offline.Model{}, Agents: endpoints(), Now: time.Now}
	j := loadJob(srv.URL, 4, 5, 4)
	var asked atomic.Int32
	j.Next = func() (bool, string) { asked.Add(1); return false, "" }
	s := ex.Load(context.Background(), j)
	if got := srv.total.Load(); got != 4 || len(s.GetTurnUs()) != 4 || len(s.GetFailures()) != 0 {
		t.Fatalf("%d calls, %d turns measured, failures %v; want each of 4 callers to play its first turn only", got, len(s.GetTurnUs()), s.GetFailures())
	}
	if asked.Load() != 4 {
		t.Fatalf("asked %d times; want once per caller, before its second turn", asked.Load())
	}
	// A stopping runner's: the turns not played are counted as failed, why
	// said, so the step does not read as whole.
	j.Next = func() (bool, string) { return false, LoadStoppedReason }
	s = ex.Load(context.Background(), j)
	if f := s.GetFailures(); len(f) != 1 || f[0].GetReason() != LoadStoppedReason || f[0].GetCount() != 16 || len(s.GetTurnUs()) != 4 {
		t.Fatalf("failures %v, %d turns measured; want 4 played and 16 counted as not played", f, len(s.GetTurnUs()))
	}
}

// The callers of a job share one read of the invocation per period.
func TestASharedCheckAsksAtMostOncePerPeriod(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	answer, asks := true, 0
	c := &sharedCheck{every: time.Second, now: func() time.Time { return now }, ask: func() bool { asks++; return answer }}
	for range 3 {
		if !c.Wanted() {
			t.Fatal("not wanted while running")
		}
	}
	answer = false
	if !c.Wanted() || asks != 1 {
		t.Fatalf("asked %d times within the period", asks)
	}
	now = now.Add(time.Second)
	if c.Wanted() || asks != 2 {
		t.Fatalf("after the period: asked %d times, the cancel not seen", asks)
	}
}

// An endpoint that answers at once with nothing (no text, no call) is a
// dead agent, not a fast one: each such turn is a failed turn, and none
// is sampled as a first token.
func TestALoadTurnAnsweredWithNothingFails(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"))
	}))
	t.Cleanup(srv.Close)
	ex := &Executor{Model: offline.Model{}, Agents: endpoints(), Now: time.Now}
	s := ex.Load(context.Background(), loadJob(srv.URL, 3, 2, 3))
	if len(s.GetFirstTokenUs()) != 0 || len(s.GetFailures()) != 1 || s.GetFailures()[0].GetCount() != 6 ||
		!strings.Contains(s.GetFailures()[0].GetReason(), "answered nothing") {
		t.Fatalf("%d first tokens sampled, failures %v; want 6 turns failed as answered with nothing", len(s.GetFirstTokenUs()), s.GetFailures())
	}
}

// The wait before a retry is the endpoint's doing (here the Retry-After it
// asked for), not the platform's overhead.
func TestARetrysWaitIsNotOverhead(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("retry-after-ms", "300")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"error":{"message":"slow down"}}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"We open at nine."},"finish_reason":"stop"}]}`))
	}))
	t.Cleanup(srv.Close)
	ex := &Executor{Model: offline.Model{}, Agents: endpoints(), Now: time.Now}
	s := ex.Load(context.Background(), loadJob(srv.URL, 1, 1, 1))
	if len(s.GetTurnUs()) != 1 || calls.Load() != 2 {
		t.Fatalf("%d turns, %d calls, failures %v", len(s.GetTurnUs()), calls.Load(), s.GetFailures())
	}
	if turn, over := s.GetTurnUs()[0], s.GetOverheadUs()[0]; turn < 300_000 || over >= 300_000 {
		t.Fatalf("turn %d µs, overhead %d µs: the 300 ms the endpoint asked to wait was counted as the platform's", turn, over)
	}
}

// A stopping worker's load job starts no further turn: its callers stop
// at their next turn without asking the invocation (a SIGTERM waited for
// every turn of a long load test).
func TestAStoppingWorkersLoadCallersStop(t *testing.T) {
	stopping := make(chan struct{})
	ctx := context.WithValue(context.Background(), stoppingKey{}, (<-chan struct{})(stopping))
	next := (&Worker{}).nextTurn(ctx, "ws_1", "tinv_1") // no App: asking the invocation would panic
	close(stopping)
	if goOn, unplayed := next(); goOn || unplayed != LoadStoppedReason {
		t.Fatalf("a stopping worker's callers: go on %v, the turns not played counted as %q", goOn, unplayed)
	}
}
