package stack

import (
	"encoding/json"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/llm/llmtest"
)

// fairBound is how soon another workspace's one-run invocation completes
// while one workspace's backlog holds the runner. Before runs were
// scheduled fairly it waited for the backlog: a minute and more here.
const fairBound = 10 * time.Second

// One workspace's invocation of many runs on an endpoint that answers
// after a minute does not hold back another workspace: its one-run
// invocation, on an agent the platform's model plays, completes within a
// few seconds.
func TestFairRunsBesideASlowEndpoint(t *testing.T) {
	t.Parallel()
	s := fairStack(t)
	var calls atomic.Int32
	release := make(chan struct{})
	slow := llmtest.NewServer(func(req llmtest.Request) llmtest.Reply {
		calls.Add(1)
		select { // far longer than fairBound
		case <-time.After(time.Minute):
		case <-release:
		case <-req.Context.Done():
		}
		return llmtest.OK("We open nine to five.")
	})
	t.Cleanup(func() { close(release); slow.Close() }) // before the stack stops
	hours := createTest(t, s.Stack, hoursTest)
	backlog := startRuns(t, s.Stack, adminKey, s.teamAgent(t, slow.URL), 50, hours)
	// The backlog holds the runner: the endpoint's 4 slots are calling it.
	eventually(t, 30*time.Second, "the slow endpoint called 4 times at once", func() bool { return calls.Load() >= 4 })
	oneRunElsewhere(t, s)
	cancelRuns(t, s, adminKey, backlog)
}

// The same with a dead endpoint (it takes connections and never
// answers) that two invocations of the workspace share by URL: their
// runs wait for its slots, and not in the runner's.
func TestFairRunsBesideADeadEndpoint(t *testing.T) {
	t.Parallel()
	s := fairStack(t)
	dead := deadEndpoint(t)
	hours := createTest(t, s.Stack, hoursTest)
	first := startRuns(t, s.Stack, adminKey, s.teamAgent(t, dead.url), 40, hours)
	second := startRuns(t, s.Stack, adminKey, s.teamAgent(t, dead.url), 40, hours)
	eventually(t, 30*time.Second, "the dead endpoint holds 4 connections", func() bool { return dead.accepted() >= 4 })
	oneRunElsewhere(t, s)
	cancelRuns(t, s, adminKey, first)
	cancelRuns(t, s, adminKey, second)
}

// A run waiting for an endpoint's slot holds no runner slot: on a runner
// of 2 slots whose runs wait for an endpoint taking 1 request at a time,
// another invocation of the same workspace still runs at once (held in
// their slots, the waiting runs would have kept it out for a minute).
func TestRunsWaitingForAnEndpointHoldNoRunnerSlot(t *testing.T) {
	t.Parallel()
	s := startWithEndpoints(t, llmtest.Fixed(0, `{"result":"success","rationale":["ok"],"summary":"ok"}`), func(c *Config) {
		administered(c, nil)
		c.Runner.Concurrency, c.Runner.EndpointConcurrency, c.Runner.EndpointTimeout = 2, 1, 20*time.Second
	})
	var calls atomic.Int32
	release := make(chan struct{})
	slow := llmtest.NewServer(func(req llmtest.Request) llmtest.Reply {
		calls.Add(1)
		select {
		case <-time.After(time.Minute):
		case <-release:
		case <-req.Context.Done():
		}
		return llmtest.OK("We open nine to five.")
	})
	t.Cleanup(func() { close(release); slow.Close() })
	hours := createTest(t, s.Stack, hoursTest)
	backlog := startRuns(t, s.Stack, adminKey, s.teamAgent(t, slow.URL), 20, hours)
	// The worker took 2 jobs at once: one run calls the endpoint, the
	// other waits for its slot.
	eventually(t, 30*time.Second, "the slow endpoint called", func() bool { return calls.Load() >= 1 })
	started := time.Now()
	id := startRuns(t, s.Stack, adminKey, agentWith(t, s.Stack), 1, hours)
	eventually(t, fairBound, "the same workspace's other invocation completes", func() bool {
		return getInvocation(t, s.Stack, id).Status == "completed"
	})
	t.Logf("the other invocation completed in %s", time.Since(started).Round(time.Millisecond))
	cancelRuns(t, s, adminKey, backlog)
}

// fairStack is a stack with one runner of 8 slots whose agents may call
// endpoints on this machine, 4 requests at a time per endpoint, and
// whose platform model answers at once.
func fairStack(t *testing.T) *endpointStack {
	return startWithEndpoints(t, llmtest.Fixed(0, `{"result":"success","rationale":["ok"],"summary":"ok"}`), func(c *Config) {
		administered(c, nil)
		c.Runner.Concurrency, c.Runner.EndpointConcurrency, c.Runner.EndpointTimeout = 8, 4, 20*time.Second
	})
}

// oneRunElsewhere runs one test once in a new workspace, on an agent the
// platform's model plays, and requires it to complete within fairBound.
func oneRunElsewhere(t *testing.T, s *endpointStack) {
	t.Helper()
	other := createWorkspace(t, s.Stack, "Other team")
	agent := createAgent(t, s.Stack, other.APIKey, `{"name":"Front desk",
	  "conversation_config":{"agent":{"prompt":{"prompt":"Our opening hours are nine to five every weekday."}}}}`)
	r := call(t, s.Stack, "POST", "/v1/convai/agent-testing/create", other.APIKey, hoursTest)
	if r.Code != 200 {
		t.Fatalf("test: %d %s", r.Code, r.Body)
	}
	test := r.JSON(t)["id"].(string)
	started := time.Now()
	id := startRuns(t, s.Stack, other.APIKey, agent, 1, test)
	var inv invocation
	eventually(t, fairBound, "the other workspace's one run completes", func() bool {
		r := call(t, s.Stack, "GET", "/v1/convai/test-invocations/"+id, other.APIKey, "")
		_ = json.Unmarshal(r.Body, &inv)
		return inv.Status == "completed"
	})
	if len(inv.TestRuns) != 1 || inv.TestRuns[0].Status != "passed" {
		t.Fatalf("the other workspace's run: %+v", inv.TestRuns)
	}
	t.Logf("the other workspace's one-run invocation completed in %s", time.Since(started).Round(time.Millisecond))
}

// cancelRuns cancels an invocation, so that its runs not started end
// with the test.
func cancelRuns(t *testing.T, s *endpointStack, key, id string) {
	t.Helper()
	if r := call(t, s.Stack, "POST", "/v1/convai/test-invocations/"+id+"/cancel", key, ""); r.Code != 200 {
		t.Fatalf("cancel: %d %s", r.Code, r.Body)
	}
}

// dead is an endpoint that takes connections and never answers.
type dead struct {
	url  string
	mu   sync.Mutex
	n    int
	cons []net.Conn
}

func (d *dead) accepted() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n
}

func deadEndpoint(t *testing.T) *dead {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &dead{url: "http://" + l.Addr().String() + "/v1"}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			d.mu.Lock()
			d.n++
			d.cons = append(d.cons, c)
			d.mu.Unlock()
		}
	}()
	t.Cleanup(func() { // before the stack stops: its runs end at once
		_ = l.Close()
		d.mu.Lock()
		defer d.mu.Unlock()
		for _, c := range d.cons {
			_ = c.Close()
		}
	})
	return d
}
