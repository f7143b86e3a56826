package stack

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/wire"
)

// A test's reliability over a known mix: two passing repeats, then, with
// the agent's prompt no longer covering the question, two failing ones.
func TestReliabilityThroughTheGateway(t *testing.T) {
	t.Parallel()
	s := startForTesting(t)
	agent := agentWith(t, s)
	hours := createTest(t, s, hoursTest)
	var got struct {
		ID          string               `json:"id"`
		Reliability wire.TestReliability `json:"reliability"`
	}
	// Before any run nothing is known: rate 0 of 0, interval [0, 1].
	r := call(t, s, "GET", "/v1/convai/agent-testing/"+hours, adminKey, "")
	if err := json.Unmarshal(r.Body, &got); r.Code != 200 || err != nil || got.Reliability.Runs != 0 ||
		!reflect.DeepEqual(got.Reliability.PassRateCI95, []float64{0, 1}) || len(got.Reliability.Invocations) != 0 {
		t.Fatalf("a test never run: %d %s", r.Code, r.Body)
	}
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

	r = call(t, s, "GET", "/v1/convai/agent-testing/"+hours, adminKey, "")
	if err := json.Unmarshal(r.Body, &got); r.Code != 200 || err != nil {
		t.Fatalf("get test: %d %s", r.Code, r.Body)
	}
	rel := got.Reliability
	// 2 of 4: rate 0.5, Wilson 95% [0.150, 0.850]; pass^3 = C(2,3)/C(4,3) = 0.
	if rel.Runs != 4 || rel.Passed != 2 || rel.PassRate != 0.5 || len(rel.PassRateCI95) != 2 || rel.PassRateCI95[0] != 0.15 || rel.PassRateCI95[1] != 0.85 ||
		rel.PassHatK == nil || rel.PassHatK.K != 3 || rel.PassHatK.Value != 0 {
		t.Fatalf("overall reliability %+v: %s", rel.Reliability, r.Body)
	}
	if len(rel.Invocations) != 2 || rel.Invocations[0].InvocationID != failing || rel.Invocations[0].PassRate != 0 ||
		rel.Invocations[1].InvocationID != passing || rel.Invocations[1].PassRate != 1 || rel.Invocations[1].PassHatK == nil || rel.Invocations[1].PassHatK.K != 2 {
		t.Fatalf("per invocation, newest first: %+v", rel.Invocations)
	}
	// Each invocation ran this test alone, so the test's latency in it is
	// the invocation's own; over both, it is over every turn of the two.
	turns := 0
	for i, id := range []string{failing, passing} {
		var inv struct {
			AgentLatency wire.AgentLatency `json:"agent_latency"`
		}
		if r := call(t, s, "GET", "/v1/convai/test-invocations/"+id, adminKey, ""); r.Code != 200 || json.Unmarshal(r.Body, &inv) != nil {
			t.Fatalf("invocation %s: %d %s", id, r.Code, r.Body)
		}
		want, got := inv.AgentLatency, rel.Invocations[i].AgentLatency
		if want.Turns < 2 || want.P95Ms == nil || want.FirstTokenP95Ms == nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("invocation %s: the test's latency %+v, the invocation's %+v", id, got, want)
		}
		turns += want.Turns
	}
	if all := rel.AgentLatency; all.Turns != turns || all.MaxMs == nil || all.FirstTokenMaxMs == nil {
		t.Fatalf("over both invocations: %+v, want %d turns", all, turns)
	}
	r = call(t, s, "GET", "/v1/convai/agent-testing/"+hours+"?k=1", adminKey, "")
	if err := json.Unmarshal(r.Body, &got); err != nil || got.Reliability.PassHatK == nil || got.Reliability.PassHatK.Value != 0.5 {
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
			ID          string           `json:"id"`
			Reliability wire.Reliability `json:"reliability"`
		} `json:"results"`
	}
	r = call(t, s, "GET", "/v1/convai/test-invocations?agent_id="+agent, adminKey, "")
	if err := json.Unmarshal(r.Body, &list); err != nil || len(list.Results) != 2 {
		t.Fatalf("invocations: %s", r.Body)
	}
	if a, b := list.Results[0], list.Results[1]; a.ID != failing || a.Reliability.PassRate != 0 || a.Reliability.Runs != 2 ||
		b.ID != passing || b.Reliability.PassRate != 1 || b.Reliability.PassRateCI95[0] != 0.342 ||
		a.Reliability.PassHatK != nil { // pass^k is one test's, not a mix's
		t.Fatalf("summaries: %+v", list.Results)
	}
}
