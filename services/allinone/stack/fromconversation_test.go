package stack

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// prodResult is what the order-status tool returned in production.
const prodResult = "Order 4521 was shipped on Monday and arrives Thursday."

// prodConversation is a production conversation as the voice runtime's
// GET conversation answers its transcript: the user asks for an order,
// the agent calls its tool, gets the result, and then states the wrong
// day (turn 4).
const prodConversation = `[
 {"role":"agent","message":"Hi, this is Acme support.","time_in_call_secs":0,"tool_calls":[],"source_medium":"audio"},
 {"role":"user","message":"I want to know the status of order 4521.","time_in_call_secs":3,"tool_calls":[],"source_medium":"audio"},
 {"role":"agent","message":null,"time_in_call_secs":5,"agent_metadata":{"agent_id":"agent_prod","workflow_node_id":"node_orders"},
  "tool_calls":[{"type":"webhook","request_id":"call_prod_1","tool_name":"get_order_status","params_as_json":"{\"order_id\":\"4521\"}","tool_has_been_called":true}]},
 {"role":"agent","message":null,"time_in_call_secs":6,
  "tool_results":[{"request_id":"call_prod_1","tool_name":"get_order_status","result_value":"` + prodResult + `","is_error":false,"tool_has_been_called":true,"type":"webhook"}]},
 {"role":"agent","message":"Your order arrives tomorrow.","time_in_call_secs":7,"agent_metadata":{"agent_id":"agent_prod","workflow_node_id":"node_orders"}},
 {"role":"user","message":"Great, thanks.","time_in_call_secs":10}
]`

// TestRegressionFromConversationThroughTheGateway turns a reported
// production turn into a test, reads it back, runs it with the offline
// model and checks the agent's tool call was answered with the result
// production saw.
func TestRegressionFromConversationThroughTheGateway(t *testing.T) {
	t.Parallel()
	s := startForTesting(t)
	agent := acmeSupportAgent(t, s, "")
	body := func(agentID string, turn int, extra string) string {
		return fmt.Sprintf(`{"agent_id":%q,"conversation_id":"conv_prod_1","transcript":%s,"turn_index":%d%s}`, agentID, prodConversation, turn, extra)
	}
	const path = "/v1/convai/agent-testing/from-conversation"

	// Bad input, each a 4xx in the spec's shape.
	for _, c := range []struct {
		body, loc string
	}{
		{body(agent, 1, ""), `["body","turn_index"]`},
		{body(agent, 6, ""), `["body","turn_index"]`},
		{`{"agent_id":"` + agent + `","conversation_id":"c","transcript":[],"turn_index":0}`, `["body","transcript"]`},
		{body(agent, 4, `,"parent_folder_id":"tfld_nope"`), `["body","parent_folder_id"]`},
	} {
		r := call(t, s, "POST", path, adminKey, c.body)
		if r.Code != 422 || !strings.Contains(string(r.Body), `"loc":`+c.loc) {
			t.Fatalf("%s: %d %s", c.loc, r.Code, r.Body)
		}
	}
	wantError(t, call(t, s, "POST", path, adminKey, body("agent_unknown", 4, "")), 404, "agent_not_found")
	wantError(t, call(t, s, "POST", path, adminKey, `{"agent_id":`), 400, "malformed_json")
	wantError(t, call(t, s, "POST", path, adminKey, body(agent, 4, `,"name":"`+strings.Repeat("x", 1<<20)+`"`)), 413, "body_too_large")

	// Created (201), and once only with an Idempotency-Key.
	good := body(agent, 4, `,"ticket_id":"tkt_prod_7","success_condition":"The agent says order 4521 arrives Thursday"`)
	r := call(t, s, "POST", path, adminKey, good, "Idempotency-Key", "regress-1")
	if r.Code != 201 {
		t.Fatalf("from-conversation: %d %s", r.Code, r.Body)
	}
	test := r.JSON(t)["id"].(string)
	if again := call(t, s, "POST", path, adminKey, good, "Idempotency-Key", "regress-1"); again.Code != 201 || again.JSON(t)["id"] != test {
		t.Fatalf("retry: %d %s, want %s", again.Code, again.Body, test)
	}

	// Readable with GET, in the public test shape.
	r = call(t, s, "GET", "/v1/convai/agent-testing/"+test, adminKey, "")
	if r.Code != 200 {
		t.Fatalf("get: %d %s", r.Code, r.Body)
	}
	var got struct {
		Type        string           `json:"type"`
		Name        string           `json:"name"`
		ChatHistory []map[string]any `json:"chat_history"`
		Meta        struct {
			ConversationID string           `json:"conversation_id"`
			AgentID        string           `json:"agent_id"`
			BranchID       string           `json:"branch_id"`
			WorkflowNodeID string           `json:"workflow_node_id"`
			TicketID       string           `json:"ticket_id"`
			Reply          []map[string]any `json:"original_agent_reply"`
		} `json:"from_conversation_metadata"`
		Mocks map[string][]struct {
			MockResult string `json:"mock_result"`
		} `json:"tool_mock_overrides"`
	}
	if err := json.Unmarshal(r.Body, &got); err != nil {
		t.Fatal(err)
	}
	m := got.Meta
	if got.Type != "llm" || len(got.ChatHistory) != 4 || got.ChatHistory[3]["tool_results"] == nil ||
		m.ConversationID != "conv_prod_1" || m.AgentID != agent || m.BranchID != "main" || m.WorkflowNodeID != "node_orders" ||
		m.TicketID != "tkt_prod_7" || len(m.Reply) != 1 || m.Reply[0]["message"] != "Your order arrives tomorrow." ||
		len(got.Mocks["get_order_status"]) != 1 || got.Mocks["get_order_status"][0].MockResult != prodResult {
		t.Fatalf("test %s", r.Body)
	}

	// Defaults: a name and condition from the conversation, at the root.
	r = call(t, s, "POST", path, adminKey, body(agent, 2, `,"parent_folder_id":"root"`))
	if r.Code != 201 {
		t.Fatalf("from-conversation with defaults: %d %s", r.Code, r.Body)
	}
	def := call(t, s, "GET", "/v1/convai/agent-testing/"+r.JSON(t)["id"].(string), adminKey, "").JSON(t)
	if def["name"] != `Regression: "I want to know the status of order 4521." (conv_prod_1, turn 2)` || def["parent_folder_id"] != nil ||
		!strings.Contains(def["success_condition"].(string), `"Your order arrives tomorrow."`) {
		t.Fatalf("defaults: %v", def)
	}

	// Run: the history holds the tool's production result, so the agent
	// states it; and a test cut before the tool call (turn 2) has the
	// agent call its tool again and get production's result from the mock.
	defaults := def["id"].(string)
	inv := startInvocation(t, s, adminKey, agent, fmt.Sprintf(`{"tests":[{"test_id":%q},{"test_id":%q}]}`, test, defaults))
	awaitCompleted(t, s, inv, 30*time.Second)
	for _, run := range getInvocation(t, s, inv).TestRuns {
		mocked, said := false, false
		for _, msg := range run.AgentResponses {
			results, _ := msg["tool_results"].([]any)
			for _, res := range results {
				res := res.(map[string]any)
				mocked = mocked || res["tool_name"] == "get_order_status" && res["result_value"] == prodResult && res["is_error"] == false
			}
			said = said || msg["role"] == "agent" && msg["message"] == prodResult
		}
		switch run.TestID {
		case test:
			if !said || mocked || run.Status != "passed" {
				t.Fatalf("turn 4: run %s (%s): mocked %v, said %v; agent_responses %v", run.Status, run.ConditionResult.Rationale.Summary, mocked, said, run.AgentResponses)
			}
		case defaults:
			if !mocked || !said {
				t.Fatalf("turn 2: run %s: mocked %v, said %v; agent_responses %v", run.Status, mocked, said, run.AgentResponses)
			}
		}
	}
}
