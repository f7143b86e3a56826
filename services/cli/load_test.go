package cli

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

const runningLoad = `{"id":"tinv_9","agent_id":"agent_1","test_name":"Hours","status":"running","broke_budget_at_step":null,
 "broke_budget_at_callers":null,"steps":[{"step":0,"callers":1,"status":"running","turns":0,"failed_turns":0,"failed_share":0,"failures":[]},
 {"step":1,"callers":10,"status":"pending","turns":0,"failed_turns":0,"failed_share":0,"failures":[]},
 {"step":2,"callers":50,"status":"pending","turns":0,"failed_turns":0,"failed_share":0,"failures":[]}]}`

const doneLoad = `{"id":"tinv_9","agent_id":"agent_1","test_name":"Hours","status":"completed","broke_budget_at_step":2,
 "broke_budget_at_callers":50,"steps":[
 {"step":0,"callers":1,"status":"completed","turns":1,"failed_turns":0,"failed_share":0,"failures":[],
  "first_token_ms":{"p50":62,"p95":62,"max":62},"turn_ms":{"p50":93,"p95":93,"max":93},"overhead_us":{"p50":455,"p95":455},"met_budget":true,"budget_breaches":[]},
 {"step":1,"callers":10,"status":"completed","turns":10,"failed_turns":0,"failed_share":0,"failures":[],
  "first_token_ms":{"p50":103,"p95":152,"max":152},"turn_ms":{"p50":136,"p95":184,"max":184},"overhead_us":{"p50":150,"p95":255},"met_budget":true,"budget_breaches":[]},
 {"step":2,"callers":50,"status":"completed","turns":50,"failed_turns":5,"failed_share":0.1,
  "failures":[{"reason":"agent endpoint stream: no [DONE] before the connection closed (after 1 chunks)","count":5}],
  "first_token_ms":{"p50":308,"p95":530,"max":548},"turn_ms":{"p50":342,"p95":561,"max":580},"overhead_us":{"p50":134,"p95":200},"met_budget":false,
  "budget_breaches":[{"metric":"first_token_p95","measured_ms":530,"budget_ms":250}]}]}`

func TestTestsLoadWait(t *testing.T) {
	f, base := newFake(t)
	f.on("POST /v1/convai/agents/agent_1/load-tests", reply(201, runningLoad))
	var polls atomic.Int32
	f.on("GET /v1/convai/load-tests/tinv_9", func(w http.ResponseWriter, r *http.Request) {
		if polls.Add(1) < 2 {
			reply(200, runningLoad)(w, r)
			return
		}
		reply(200, doneLoad)(w, r)
	})
	r := runOn(t, base, "tests", "load", "--agent", "agent_1", "--test", "test_0", "--steps", "1, 10,50", "--wait", "--poll", "1ms")
	if r.code != ExitFailed {
		t.Fatalf("exit %d (want 1: a step broke the budget), stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	var body struct {
		TestID string `json:"test_id"`
		Steps  []int  `json:"steps"`
		Turns  int    `json:"turns_per_caller"`
	}
	if err := json.Unmarshal([]byte(f.bodies[0]), &body); err != nil || body.TestID != "test_0" || len(body.Steps) != 3 || body.Steps[2] != 50 || body.Turns != 1 {
		t.Fatalf("load-tests body %s", f.bodies[0])
	}
	for _, want := range []string{
		"STEP  CALLERS  STATUS     TURNS  FAILED",
		"3     50       completed  50     5 (10.0%)  308 / 530",
		"342 / 561",
		"step 3: 5 turn(s) failed: agent endpoint stream: no [DONE]",
		"The budget broke at step 3 (50 callers): first token p95 530 ms over 250 ms; 5 turn(s) failed.",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "tinv_9: step 3 of 3 (50 callers) done") {
		t.Fatalf("progress %q", r.stderr)
	}
}

func TestTestsLoadWithoutWaitAndShow(t *testing.T) {
	f, base := newFake(t)
	f.on("POST /v1/convai/agents/agent_1/load-tests", reply(201, runningLoad))
	f.on("GET /v1/convai/load-tests/tinv_9", reply(200, strings.Replace(strings.Replace(doneLoad, `"met_budget":false`, `"met_budget":true`, 1),
		`"broke_budget_at_step":2`, `"broke_budget_at_step":null`, 1)))
	r := runOn(t, base, "tests", "load", "--agent", "agent_1", "--test", "test_0", "--steps", "1,10,50")
	if r.code != ExitOK || !strings.Contains(r.stdout, "Started load test tinv_9: steps 1,10,50") || len(f.requests) != 1 {
		t.Fatalf("exit %d, stdout %q, %d requests", r.code, r.stdout, len(f.requests))
	}
	r = runOn(t, base, "tests", "load-result", "tinv_9")
	if r.code != ExitOK || !strings.Contains(r.stdout, "Every step met the budget.") {
		t.Fatalf("exit %d, stdout %q", r.code, r.stdout)
	}
	for _, bad := range []string{"1,0", "ten", ""} {
		r = runOn(t, base, "tests", "load", "--agent", "agent_1", "--test", "test_0", "--steps", bad)
		if r.code != ExitError {
			t.Fatalf("--steps %q: exit %d", bad, r.code)
		}
	}
}

// tests invocation of a load test (an invocation without runs) shows its
// steps, not an empty set of runs.
func TestTestsInvocationOfALoadTestShowsItsSteps(t *testing.T) {
	f, base := newFake(t)
	f.on("GET /v1/convai/test-invocations/tinv_9", reply(200, `{"id":"tinv_9","agent_id":"agent_1","status":"completed","title":"Load test: Hours","test_runs":[]}`))
	f.on("GET /v1/convai/load-tests/tinv_9", reply(200, doneLoad))
	r := runOn(t, base, "tests", "invocation", "tinv_9")
	if r.code != 0 || !strings.Contains(r.stdout, "Load test tinv_9 (Hours): completed") || !strings.Contains(r.stdout, "BROKEN") {
		t.Fatalf("%d %q %q", r.code, r.stdout, r.stderr)
	}
}
