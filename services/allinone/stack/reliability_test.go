package stack

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// A test's reliability over a known mix: two passing repeats, then, with
// the agent's prompt no longer covering the question, two failing ones.
func TestReliabilityThroughTheGateway(t *testing.T) {
	t.Parallel()
	s := startForTesting(t)
	agent := agentWith(t, s)
	hours := createTest(t, s, hoursTest)
	run := func(want string) string {
		t.Helper()
		id := runAndWait(t, s, agent, 2, hours)
		for _, run := range getInvocation(t, s, id).TestRuns {
			if run.Status != want {
				t.Fatalf("run %s: %s (%v); want %s", run.TestRunID, run.Status, run.ConditionResult, want)
			}
		}
		return id
	}
	passing := run("passed")
	dropOpeningHours(t, s, agent)
	failing := run("failed")

	type figures struct {
		Runs         int       `json:"runs"`
		Passed       int       `json:"passed"`
		PassRate     float64   `json:"pass_rate"`
		CI           []float64 `json:"pass_rate_ci95"`
		InvocationID string    `json:"invocation_id"`
		PassHatK     struct {
			K     int     `json:"k"`
			Value float64 `json:"value"`
		} `json:"pass_hat_k"`
	}
	var got struct {
		ID          string `json:"id"`
		Reliability struct {
			figures
			Invocations []figures `json:"invocations"`
		} `json:"reliability"`
	}
	r := call(t, s, "GET", "/v1/convai/agent-testing/"+hours, adminKey, "")
	if err := json.Unmarshal(r.Body, &got); r.Code != 200 || err != nil {
		t.Fatalf("get test: %d %s", r.Code, r.Body)
	}
	rel := got.Reliability
	// 2 of 4: rate 0.5, Wilson 95% [0.150, 0.850]; pass^3 = C(2,3)/C(4,3) = 0.
	if rel.Runs != 4 || rel.Passed != 2 || rel.PassRate != 0.5 || len(rel.CI) != 2 || rel.CI[0] != 0.15 || rel.CI[1] != 0.85 ||
		rel.PassHatK.K != 3 || rel.PassHatK.Value != 0 {
		t.Fatalf("overall reliability %+v: %s", rel.figures, r.Body)
	}
	if len(rel.Invocations) != 2 || rel.Invocations[0].InvocationID != failing || rel.Invocations[0].PassRate != 0 ||
		rel.Invocations[1].InvocationID != passing || rel.Invocations[1].PassRate != 1 || rel.Invocations[1].PassHatK.K != 2 {
		t.Fatalf("per invocation, newest first: %+v", rel.Invocations)
	}
	// Each invocation ran this test alone, so the test's latency in it is
	// the invocation's own; over both, it is over every turn of the two.
	var lat struct {
		Reliability struct {
			AgentLatency map[string]any   `json:"agent_latency"`
			Invocations  []map[string]any `json:"invocations"`
		} `json:"reliability"`
	}
	if err := json.Unmarshal(r.Body, &lat); err != nil || len(lat.Reliability.Invocations) != 2 {
		t.Fatalf("latency: %v %s", err, r.Body)
	}
	turns := 0.0
	for i, id := range []string{failing, passing} {
		var inv struct {
			AgentLatency map[string]any `json:"agent_latency"`
		}
		if r := call(t, s, "GET", "/v1/convai/test-invocations/"+id, adminKey, ""); r.Code != 200 || json.Unmarshal(r.Body, &inv) != nil {
			t.Fatalf("invocation %s: %d %s", id, r.Code, r.Body)
		}
		want := inv.AgentLatency
		got, _ := lat.Reliability.Invocations[i]["agent_latency"].(map[string]any)
		n, _ := want["turns"].(float64)
		if n < 2 || want["p95_ms"] == nil || want["first_token_p95_ms"] == nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("invocation %s: the test's latency %v, the invocation's %v", id, got, want)
		}
		turns += n
	}
	if all := lat.Reliability.AgentLatency; all["turns"] != turns || all["max_ms"] == nil || all["first_token_max_ms"] == nil {
		t.Fatalf("over both invocations: %v, want %v turns", all, turns)
	}
	r = call(t, s, "GET", "/v1/convai/agent-testing/"+hours+"?k=1", adminKey, "")
	if err := json.Unmarshal(r.Body, &got); err != nil || got.Reliability.PassHatK.Value != 0.5 {
		t.Fatalf("pass^1 is the pass rate: %s", r.Body)
	}
	for _, k := range []string{"0", "11", "two"} {
		if r := call(t, s, "GET", "/v1/convai/agent-testing/"+hours+"?k="+k, adminKey, ""); r.Code != 422 || !strings.Contains(string(r.Body), `"loc":["query","k"]`) {
			t.Fatalf("k=%s: %d %s", k, r.Code, r.Body)
		}
	}

	// Invocation summaries carry the pass rate of their finished runs.
	var list struct {
		Results []struct {
			ID          string  `json:"id"`
			Reliability figures `json:"reliability"`
		} `json:"results"`
	}
	r = call(t, s, "GET", "/v1/convai/test-invocations?agent_id="+agent, adminKey, "")
	if err := json.Unmarshal(r.Body, &list); err != nil || len(list.Results) != 2 {
		t.Fatalf("invocations: %s", r.Body)
	}
	if a, b := list.Results[0], list.Results[1]; a.ID != failing || a.Reliability.PassRate != 0 || a.Reliability.Runs != 2 ||
		b.ID != passing || b.Reliability.PassRate != 1 || b.Reliability.CI[0] != 0.342 {
		t.Fatalf("summaries: %+v", list.Results)
	}
}
