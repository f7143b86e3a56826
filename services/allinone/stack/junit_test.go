package stack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/services/testing/ports/junitxsd"
)

// startInvocation posts body (a run-tests request) for agent with key,
// wants 200 and answers the invocation's id.
func startInvocation(t *testing.T, s *Stack, key, agent, body string) string {
	t.Helper()
	return postForID(t, s, key, "/v1/convai/agents/"+agent+"/run-tests", body, 200, "id")
}

// startRuns starts an invocation of the tests, each repeated repeat
// times, with key, and returns its id.
func startRuns(t *testing.T, s *Stack, key, agent string, repeat int, tests ...string) string {
	t.Helper()
	refs := make([]string, len(tests))
	for i, id := range tests {
		refs[i] = fmt.Sprintf(`{"test_id":%q}`, id)
	}
	return startInvocation(t, s, key, agent, fmt.Sprintf(`{"tests":[%s],"repeat_count":%d}`, strings.Join(refs, ","), repeat))
}

// awaitCompleted waits until invocation id completes.
func awaitCompleted(t *testing.T, s *Stack, id string, within time.Duration) {
	t.Helper()
	eventually(t, within, "invocation "+id+" completes", func() bool { return getInvocation(t, s, id).Status == "completed" })
}

// runAndWait runs tests on agent repeat times each and waits until the
// invocation completes.
func runAndWait(t *testing.T, s *Stack, agent string, repeat int, tests ...string) string {
	t.Helper()
	id := startRuns(t, s, adminKey, agent, repeat, tests...)
	awaitCompleted(t, s, id, 30*time.Second)
	return id
}

// CI reads an invocation as JUnit XML, valid against junit-10.xsd, and
// compares it with a baseline: a test whose answer the agent's prompt no
// longer covers is one regression, by name.
func TestJUnitAndBaselineComparison(t *testing.T) {
	t.Parallel()
	s := startForTesting(t)
	agent := agentWith(t, s)
	hours := createTest(t, s, hoursTest)
	const refundName = `Refunds <never> & "cancelled" ]]> 'bookings'`
	refund := createTest(t, s, `{"type":"llm","name":"Refunds <never> & \"cancelled\" ]]> 'bookings'",
	  "chat_history":[{"role":"user","message":"Do I get a refund for cancelled bookings?","time_in_call_secs":2}],
	  "success_condition":"Refunds are never given for cancelled bookings"}`)

	before := runAndWait(t, s, agent, 2, hours, refund)
	// The prompt no longer covers opening hours.
	r := call(t, s, "PATCH", "/v1/convai/agents/"+agent, adminKey,
		`{"conversation_config":{"agent":{"prompt":{"prompt":"You help {{customer}} book tables. Refunds are never given for cancelled bookings."}}}}`)
	if r.Code != 200 {
		t.Fatalf("update the agent: %d %s", r.Code, r.Body)
	}
	after := runAndWait(t, s, agent, 2, hours, refund)

	schema, err := junitxsd.JUnit10()
	if err != nil {
		t.Fatal(err)
	}
	junit := func(path string, headers ...string) *junitxsd.Document {
		t.Helper()
		r := call(t, s, "GET", path, adminKey, "", headers...)
		if r.Code != 200 || r.Header.Get("Content-Type") != "application/xml; charset=utf-8" {
			t.Fatalf("GET %s: %d %s %s", path, r.Code, r.Header.Get("Content-Type"), r.Body)
		}
		if err := schema.Validate(bytes.NewReader(r.Body)); err != nil {
			t.Fatalf("GET %s: not valid against junit-10.xsd: %v\n%s", path, err, r.Body)
		}
		d, err := junitxsd.Parse(r.Body)
		if err != nil {
			t.Fatalf("GET %s: %v\n%s", path, err, r.Body)
		}
		return d
	}

	// The regressed invocation as JUnit, with its baseline's counts.
	d := junit("/v1/convai/test-invocations/"+after+"?baseline_invocation_id="+before, "Accept", "application/xml")
	suite := d.Suites[0]
	if d.Tests != "4" || d.Failures != "2" || d.Errors != "0" || suite.Skipped != "0" || suite.ID != after {
		t.Fatalf("counts: %+v", d)
	}
	for _, c := range suite.Cases {
		failing := strings.HasPrefix(c.Name, "Opening hours (repeat ")
		if (c.Failure != nil) != failing || c.Error != nil || c.Skipped != nil || c.Classname != agent+".llm" {
			t.Fatalf("case %+v", c)
		}
		if failing && (c.Failure.Message == "" || strings.ContainsAny(c.Failure.Message, "\n") || c.Failure.Type != "failure" ||
			!strings.Contains(c.Failure.Text, "condition_result: failure")) {
			t.Fatalf("failure %+v", c.Failure)
		}
		if !failing && !strings.HasPrefix(c.Name, refundName+" (repeat ") {
			t.Fatalf("a hostile name came back as %q", c.Name)
		}
	}
	want := map[string]string{"agent_id": agent, "invocation_id": after, "status": "completed", "repeat_count": "2",
		"baseline_invocation_id": before, "regressions": "1", "fixes": "0", "new_failures": "0", "still_failing": "0"}
	// The agent's latency over the invocation's turns, as its JSON says.
	var lat struct {
		AgentLatency map[string]any `json:"agent_latency"`
	}
	if r := call(t, s, "GET", "/v1/convai/test-invocations/"+after, adminKey, ""); r.Code != 200 || json.Unmarshal(r.Body, &lat) != nil {
		t.Fatalf("invocation: %d %s", r.Code, r.Body)
	}
	for prop, field := range map[string]string{"agent_turns": "turns", "agent_turn_p50_ms": "p50_ms", "agent_turn_p95_ms": "p95_ms",
		"agent_turn_max_ms": "max_ms", "agent_first_token_p50_ms": "first_token_p50_ms", "agent_first_token_p95_ms": "first_token_p95_ms",
		"agent_first_token_max_ms": "first_token_max_ms"} {
		v, ok := lat.AgentLatency[field].(float64)
		if !ok {
			t.Fatalf("the invocation's agent_latency has no %s: %v", field, lat.AgentLatency)
		}
		want[prop] = strconv.FormatFloat(v, 'f', -1, 64)
	}
	if want["agent_turns"] == "0" {
		t.Fatalf("no agent turn recorded: %v", lat.AgentLatency)
	}
	for k, v := range want {
		if got, _ := suite.Property(k); got != v {
			t.Errorf("property %s = %q, want %q", k, got, v)
		}
	}
	// format=junit without a baseline: every run passed, no comparison.
	d = junit("/v1/convai/test-invocations/"+before+"?format=junit", "Accept", "application/json")
	if d.Tests != "4" || d.Failures != "0" {
		t.Fatalf("baseline counts: %+v", d)
	}
	if _, ok := d.Suites[0].Property("regressions"); ok {
		t.Fatal("a comparison without a baseline")
	}

	// The JSON comparison: the invocation itself, plus baseline_comparison.
	type change struct {
		TestID         string  `json:"test_id"`
		TestName       string  `json:"test_name"`
		BaselineStatus *string `json:"baseline_status"`
		Status         string  `json:"status"`
	}
	compared := func(id, baseline string) (invocation, map[string][]change) {
		t.Helper()
		r := call(t, s, "GET", "/v1/convai/test-invocations/"+id+"?baseline_invocation_id="+baseline, adminKey, "")
		if r.Code != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("compare: %d %s", r.Code, r.Body)
		}
		var inv invocation
		var body struct {
			Comparison map[string]json.RawMessage `json:"baseline_comparison"`
		}
		if err := json.Unmarshal(r.Body, &inv); err != nil {
			t.Fatalf("%v: %s", err, r.Body)
		}
		_ = json.Unmarshal(r.Body, &body)
		var gotID string
		_ = json.Unmarshal(body.Comparison["baseline_invocation_id"], &gotID)
		if gotID != baseline {
			t.Fatalf("baseline_invocation_id %q", gotID)
		}
		out := map[string][]change{}
		for _, k := range []string{"regressions", "fixes", "new_failures", "still_failing"} {
			var cs []change
			if err := json.Unmarshal(body.Comparison[k], &cs); err != nil || cs == nil {
				t.Fatalf("%s: %v %s", k, err, body.Comparison[k])
			}
			out[k] = cs
		}
		return inv, out
	}
	inv, c := compared(after, before)
	if inv.ID != after || len(inv.TestRuns) != 4 {
		t.Fatalf("the invocation around the comparison: %+v", inv)
	}
	if reg := c["regressions"]; len(reg) != 1 || reg[0].TestID != hours || reg[0].TestName != "Opening hours" ||
		reg[0].BaselineStatus == nil || *reg[0].BaselineStatus != "passed" || reg[0].Status != "failed" ||
		len(c["fixes"])+len(c["new_failures"])+len(c["still_failing"]) != 0 {
		t.Fatalf("comparison: %+v", c)
	}
	if _, c = compared(before, after); len(c["fixes"]) != 1 || c["fixes"][0].TestID != hours || len(c["regressions"]) != 0 {
		t.Fatalf("reverse comparison: %+v", c)
	}

	// Unknown, malformed and other-workspace baselines are unknown
	// invocations; an unknown format is 422.
	acme := createWorkspace(t, s, "Acme")
	r = call(t, s, "POST", "/v1/convai/agents/create", acme.APIKey, `{"name":"Acme agent","conversation_config":{"agent":{"prompt":{"prompt":"Hi."}}}}`)
	acmeAgent, _ := r.JSON(t)["agent_id"].(string)
	r = call(t, s, "POST", "/v1/convai/agent-testing/create", acme.APIKey, `{"type":"llm","name":"t","success_condition":"hi",
	  "chat_history":[{"role":"user","message":"hi","time_in_call_secs":1}]}`)
	acmeTest, _ := r.JSON(t)["id"].(string)
	r = call(t, s, "POST", "/v1/convai/agents/"+acmeAgent+"/run-tests", acme.APIKey, `{"tests":[{"test_id":"`+acmeTest+`"}]}`)
	if r.Code != 200 {
		t.Fatalf("acme run-tests: %d %s", r.Code, r.Body)
	}
	acmeInv := r.JSON(t)["id"].(string)
	for _, b := range []string{"tinv_nope", "bad.id", "%00", acmeInv} {
		for _, f := range []string{"", "&format=junit"} {
			wantError(t, call(t, s, "GET", "/v1/convai/test-invocations/"+after+"?baseline_invocation_id="+b+f, adminKey, ""),
				404, "test_invocation_not_found")
		}
	}
	r = call(t, s, "GET", "/v1/convai/test-invocations/"+after+"?format=xml", adminKey, "")
	if r.Code != 422 || !strings.Contains(string(r.Body), `["query","format"]`) {
		t.Fatalf("format=xml: %d %s", r.Code, r.Body)
	}
}
