package multiprocess

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/llm/llmtest"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
)

// A runner worker killed mid-invocation loses nothing: its runs are
// redelivered to another worker, the invocation completes, and every run
// has exactly one result (none lost, none run twice).
func TestRunnerKilledMidInvocation(t *testing.T) {
	var calls atomic.Int64
	model := llmtest.NewServer(func(req llmtest.Request) llmtest.Reply {
		calls.Add(1)
		if req.ResponseFormat != nil { // the judge
			return llmtest.OK(`{"result":"success","rationale":["matches"],"summary":"The reply gives the hours."}`).WithDelay(20 * time.Millisecond)
		}
		return llmtest.OK("We are open nine to five.").WithDelay(150 * time.Millisecond)
	})
	t.Cleanup(model.Close)

	c := newCluster(t)
	c.start("identity")
	c.start("agents")
	c.start("testing")
	runnerEnv := []string{"VOICEAI_LLM_PROVIDER=openai", "VOICEAI_LLM_BASE_URL=" + model.URL, "VOICEAI_LLM_MODEL=test-model",
		"VOICEAI_RUNNER_CONCURRENCY=4", "VOICEAI_RUNNER_ACK_WAIT=2s"}
	doomed := c.start("testing-runner", runnerEnv...)
	gw := c.gateway()

	r := do(t, "POST", gw+"/v1/convai/agents/create", adminKey, `{"name":"hours","conversation_config":{"agent":{"prompt":{"prompt":"Open nine to five."}}}}`)
	var agent struct {
		AgentID string `json:"agent_id"`
	}
	_ = json.Unmarshal(r.body, &agent)
	var tests []string
	for i := range 4 {
		// The testing service may still be starting (its processes start
		// together): the gateway answers 503, retry later, until it is up.
		var r result
		eventually(t, 30*time.Second, "the testing service answers", func() bool {
			r = do(t, "POST", gw+"/v1/convai/agent-testing/create", adminKey,
				fmt.Sprintf(`{"type":"llm","name":"hours %d","success_condition":"gives the hours",
			  "chat_history":[{"role":"user","message":"When are you open?","time_in_call_secs":1}]}`, i))
			return r.code != http.StatusServiceUnavailable
		})
		var created struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(r.body, &created); err != nil || r.code != 200 {
			t.Fatalf("create test: %d %s", r.code, r.body)
		}
		tests = append(tests, `{"test_id":"`+created.ID+`"}`)
	}
	r = do(t, "POST", gw+"/v1/convai/agents/"+agent.AgentID+"/run-tests", adminKey, `{"tests":[`+strings.Join(tests, ",")+`],"repeat_count":10}`)
	var inv struct {
		ID       string `json:"id"`
		Status   string `json:"status"`
		TestRuns []struct {
			TestRunID string `json:"test_run_id"`
			Status    string `json:"status"`
		} `json:"test_runs"`
	}
	if err := json.Unmarshal(r.body, &inv); err != nil || r.code != 200 || len(inv.TestRuns) != 40 {
		t.Fatalf("run-tests: %d %.300s", r.code, r.body)
	}

	// Kill the only worker while it has runs in flight, then replace it.
	eventually(t, 30*time.Second, "the first worker is running", func() bool { return calls.Load() >= 6 })
	doomed.kill()
	c.start("testing-runner", runnerEnv...)
	c.start("testing-runner", runnerEnv...)

	eventually(t, 60*time.Second, "the invocation completes", func() bool {
		r := do(t, "GET", gw+"/v1/convai/test-invocations/"+inv.ID, adminKey, "")
		return json.Unmarshal(r.body, &inv) == nil && inv.Status == "completed"
	})
	seen := map[string]bool{}
	for _, run := range inv.TestRuns {
		if seen[run.TestRunID] || run.Status != "passed" {
			t.Fatalf("run %s: status %s, repeated %v", run.TestRunID, run.Status, seen[run.TestRunID])
		}
		seen[run.TestRunID] = true
	}
	if len(seen) != 40 {
		t.Fatalf("%d runs, want 40", len(seen))
	}
	// Exactly one result per run on the stream: none ran twice.
	js := testenv.JetStreamAt(t, c.natsURL)
	stream, err := js.Stream(context.Background(), "TESTRUNS")
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(context.Background(), jetstream.WithSubjectFilter("testruns.evt.>"))
	if err != nil {
		t.Fatal(err)
	}
	if len(info.State.Subjects) != 40 {
		t.Fatalf("results for %d runs, want 40", len(info.State.Subjects))
	}
	for subject, n := range info.State.Subjects {
		if n != 1 {
			t.Fatalf("%s has %d results", subject, n)
		}
	}
}
