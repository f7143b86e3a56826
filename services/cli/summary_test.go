package cli

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Runs of one test that fail alike are one line with their count; a
// reason too long for the table is printed in full below it.
func TestSummaryGroupsRepeatedFailures(t *testing.T) {
	long := "The agent endpoint unreachable: " + strings.Repeat("a long explanation of what went wrong ", 6) + "END"
	inv := invocation{ID: "tinv_1", Status: "completed"}
	add := func(n int, test, status, reason string) {
		for range n {
			r := testRun{TestID: test, TestName: "name " + test, Status: status, Error: reason}
			inv.TestRuns = append(inv.TestRuns, r)
		}
	}
	add(20, "test_a", "failed", long)
	add(2, "test_a", "failed", "another reason")
	add(3, "test_b", "passed", "")
	var out bytes.Buffer
	(&app{stdout: &out}).summary(inv, time.Second, "")
	got := out.String()
	if !regexp.MustCompile(`FAILED\s+20\s+test_a`).MatchString(got) || !regexp.MustCompile(`FAILED\s+2\s+test_a\s+name test_a\s+another reason`).MatchString(got) {
		t.Fatalf("groups:\n%s", got)
	}
	if strings.Count(got, "test_b") != 0 || !strings.Contains(got, "[1] "+long) || !strings.Contains(got, "3 passed, 22 failed of 25 run(s)") {
		t.Fatalf("full reason and totals:\n%s", got)
	}
}

// The totals end with the agent's latency: first token, then whole turn;
// figures not recorded say so, and no turn at all prints no line.
func TestSummaryPrintsTheAgentsLatency(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	for _, c := range []struct {
		name string
		l    *agentLatency
		want string
	}{
		{"both", &agentLatency{Turns: 6, P50Ms: n(842), P95Ms: n(1310), MaxMs: n(1400), FirstTokenP50Ms: n(310), FirstTokenP95Ms: n(402), FirstTokenMaxMs: n(455)},
			"Agent latency over 6 turn(s): first token p50 310 ms, p95 402 ms, max 455 ms; whole turn p50 842 ms, p95 1310 ms, max 1400 ms\n"},
		{"runs recorded before first tokens", &agentLatency{Turns: 1, P50Ms: n(5), P95Ms: n(5), MaxMs: n(5)},
			"Agent latency over 1 turn(s): first token not recorded; whole turn p50 5 ms, p95 5 ms, max 5 ms\n"},
		{"no turn", &agentLatency{}, ""},
		{"an older server", nil, ""},
	} {
		var out bytes.Buffer
		inv := invocation{ID: "tinv_1", Status: "completed", TestRuns: []testRun{{Status: "passed"}}, AgentLatency: c.l}
		(&app{stdout: &out}).summary(inv, 0, "")
		const totals = "1 passed, 0 failed of 1 run(s); invocation tinv_1 (completed)\n"
		if got := out.String(); got != totals+c.want {
			t.Errorf("%s:\n%q\nwant\n%q", c.name, got, totals+c.want)
		}
	}
}

// tests show prints the test's latency over its recent runs and, newest
// first, each recent invocation's pass count and p95s.
func TestTestsShowPrintsItsLatencyHistory(t *testing.T) {
	f, base := newFake(t)
	f.on("GET /v1/convai/agent-testing/test_1", reply(200, `{"id":"test_1","name":"Opening hours","type":"llm","parent_folder_id":null,
	  "created_at_unix_secs":1767322000,"last_updated_at_unix_secs":1767322000,
	  "reliability":{"runs":3,"passed":2,"pass_rate":0.667,"pass_rate_ci95":[0.208,0.939],"pass_hat_k":{"k":3,"value":0},
	    "agent_latency":{"turns":5,"p50_ms":842,"p95_ms":1310,"max_ms":1310,"first_token_p50_ms":310,"first_token_p95_ms":402,"first_token_max_ms":402},
	    "invocations":[
	      {"invocation_id":"tinv_new","created_at_unix_secs":1767322000,"runs":2,"passed":2,
	       "agent_latency":{"turns":3,"p50_ms":842,"p95_ms":1310,"max_ms":1310,"first_token_p50_ms":310,"first_token_p95_ms":402,"first_token_max_ms":402}},
	      {"invocation_id":"tinv_old","created_at_unix_secs":1767200000,"runs":1,"passed":0,
	       "agent_latency":{"turns":2,"p50_ms":700,"p95_ms":900,"max_ms":900,"first_token_p50_ms":null,"first_token_p95_ms":null,"first_token_max_ms":null}}]}}`))
	r := run(t, "tests", "show", "test_1", "--base-url", base, "--api-key", "k")
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{
		`First token:\s+p50 310 ms, p95 402 ms, max 402 ms\n`,
		`Whole turn:\s+p50 842 ms, p95 1310 ms, max 1310 ms \(5 agent turns\)\n`,
		`INVOCATION\s+CREATED\s+PASSED\s+FIRST TOKEN P95\s+TURN P95\ntinv_new\s+.+\s+2/2\s+402 ms\s+1310 ms\ntinv_old\s+.+\s+0/1\s+-\s+900 ms\n`,
	} {
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("no %q in:\n%s", want, r.stdout)
		}
	}
}
