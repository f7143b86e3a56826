package stack

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestSimulationThroughTheGateway runs a simulation test end to end with
// the offline model: the simulated user asks what its scenario says, the
// agent calls its tool, a mock answers, and the whole conversation is
// judged.
// acmeSupportAgent creates Acme's support agent, its prompt followed by
// more, with the order-status tool, and returns its id.
func acmeSupportAgent(t *testing.T, s *Stack, more string) string {
	t.Helper()
	return createAgent(t, s, adminKey, `{"name":"Acme support",
	  "conversation_config":{"agent":{"first_message":"Hi, this is Acme support.",
	    "prompt":{"prompt":"You are the support agent of Acme Shop. Orders ship within 2 business days.`+more+`",
	      "tools":[{"id":"tool_order_status","type":"webhook","name":"get_order_status","description":"Look up the delivery status of an order",
	        "parameters":{"type":"object","properties":{"order_id":{"type":"string"}}}}]}}}}`)
}

func TestSimulationThroughTheGateway(t *testing.T) {
	t.Parallel()
	s := startAdmin(t)
	agent := acmeSupportAgent(t, s, " Returns are accepted within 30 days of delivery.")

	const mockResult = "Order 4521 was shipped on Monday and arrives Thursday."
	body := func(turns string) string {
		return `{"type":"simulation","name":"Order status and returns",
		  "simulation_scenario":"You are Sam, a customer. You want to know the status of order 4521. Then ask about returns.",
		  "simulation_max_turns":` + turns + `,
		  "success_conditions":["says order 4521 arrives Thursday","returns are accepted within 30 days"],
		  "tool_mock_config":{"mocking_strategy":"selected","mocked_tool_ids":["tool_order_status"],"fallback_strategy":"raise_error"},
		  "tool_mock_overrides":{"tool_order_status":[
		    {"parameter_conditions":[{"path":"order_id","eval":{"type":"regex","pattern":"4521"}}],"mock_result":"` + mockResult + `"}]}}`
	}
	for _, bad := range []string{"0", "51"} {
		r := call(t, s, "POST", "/v1/convai/agent-testing/create", adminKey, body(bad))
		if r.Code != 422 || !strings.Contains(string(r.Body), `"loc":["body","simulation_max_turns"]`) {
			t.Fatalf("simulation_max_turns %s: %d %s", bad, r.Code, r.Body)
		}
	}
	test := createTest(t, s, body("4"))

	inv := startInvocation(t, s, adminKey, agent, fmt.Sprintf(`{"tests":[{"test_id":%q}]}`, test))
	awaitCompleted(t, s, inv, 30*time.Second)

	run := getInvocation(t, s, inv).TestRuns[0]
	if run.Status != "passed" || run.ConditionResult.Result != "success" || run.Metadata["test_type"] != "simulation" {
		t.Fatalf("run %s: %s %q", run.Status, run.ConditionResult.Rationale.Summary, run.ConditionResult.Rationale.Messages)
	}
	var lines []string
	users, mocked := 0, false
	for _, m := range run.AgentResponses {
		lines = append(lines, fmt.Sprintf("%v: %v %v %v", m["role"], m["message"], m["tool_calls"], m["tool_results"]))
		if m["role"] == "user" {
			users++
		}
		results, _ := m["tool_results"].([]any)
		for _, res := range results {
			res := res.(map[string]any)
			if res["result_value"] == mockResult && res["is_error"] == false && res["tool_name"] == "get_order_status" {
				mocked = true
			}
		}
	}
	transcript := strings.Join(lines, "\n")
	t.Logf("transcript:\n%s\nrationale: %q", transcript, run.ConditionResult.Rationale.Messages)
	if users < 3 || !mocked || !strings.Contains(transcript, "user: I want to know the status of order 4521.") ||
		!strings.Contains(transcript, "agent: "+mockResult) || !strings.Contains(transcript, "user: Thank you, that's all.") {
		t.Fatalf("transcript:\n%s", transcript)
	}
	if msgs := run.ConditionResult.Rationale.Messages; len(msgs) == 0 || !strings.HasPrefix(msgs[0], "Simulation: 2 agent turn(s)") {
		t.Fatalf("rationale %q", msgs)
	}
}
