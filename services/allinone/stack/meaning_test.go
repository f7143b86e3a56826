package stack

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestOfflineModelReadsMeaningThroughTheGateway: the issue's own case, as
// a new user meets it on make run. Asked "Can I return the jacket I
// bought last week?", an agent whose prompt says "Refunds are possible
// within 30 days" answers with that sentence, and the default judge
// passes a condition worded in other words than the prompt's; a reply
// that negates the condition's words fails, naming why.
func TestOfflineModelReadsMeaningThroughTheGateway(t *testing.T) {
	t.Parallel()
	s := startForTesting(t)
	agent := createAgent(t, s, adminKey, `{"name":"Outfitters",
	  "conversation_config":{"agent":{"first_message":"Hello, Outfitters here.",
	    "prompt":{"prompt":"You are the support agent of Outfitters, a clothes shop. Our shop is open nine to five. Refunds are possible within 30 days. You do not need a receipt."}}}}`)
	returns := createTest(t, s, `{"type":"llm","name":"Returns",
	  "chat_history":[{"role":"user","message":"Can I return the jacket I bought last week?","time_in_call_secs":3}],
	  "success_condition":"The agent says returns are possible within a month"}`)
	receipt := createTest(t, s, `{"type":"llm","name":"Receipt",
	  "chat_history":[{"role":"user","message":"Do I need my receipt to get a refund?","time_in_call_secs":3}],
	  "success_condition":"The agent says a refund needs a receipt"}`)
	// A condition naming nothing to check passes no reply: it is unknown,
	// and the run fails saying why.
	generic := createTest(t, s, `{"type":"llm","name":"Generic",
	  "chat_history":[{"role":"user","message":"Can I return the jacket I bought last week?","time_in_call_secs":3}],
	  "success_condition":"The agent answers correctly."}`)
	// The reply's 30 days are the refunds', not the delivery's: the
	// delivery condition is missing, not contradicted.
	twoSubjects := createTest(t, s, `{"type":"llm","name":"Refunds and delivery",
	  "chat_history":[{"role":"user","message":"Can I return the jacket I bought last week?","time_in_call_secs":3}],
	  "success_condition":"refunds are possible within 30 days","success_conditions":["The agent says delivery takes three days"]}`)
	// A lone success example too little alike decides nothing; the
	// summary says what was compared.
	examplesOnly := createTest(t, s, `{"type":"llm","name":"Examples only",
	  "chat_history":[{"role":"user","message":"Can I return the jacket I bought last week?","time_in_call_secs":3}],
	  "success_examples":[{"response":"We sell gift vouchers in store.","type":"success"}]}`)
	inv := startInvocation(t, s, adminKey, agent, fmt.Sprintf(`{"tests":[{"test_id":%q},{"test_id":%q},{"test_id":%q},{"test_id":%q},{"test_id":%q}]}`,
		returns, receipt, generic, twoSubjects, examplesOnly))
	awaitCompleted(t, s, inv, 30*time.Second)
	got := getInvocation(t, s, inv)
	if len(got.TestRuns) != 5 {
		t.Fatalf("%d runs, want 5", len(got.TestRuns))
	}
	for _, run := range got.TestRuns {
		reply := ""
		if len(run.AgentResponses) > 0 {
			reply, _ = run.AgentResponses[0]["message"].(string)
		}
		rationale, _ := json.Marshal(run.ConditionResult)
		switch run.TestID {
		case returns:
			if run.Status != "passed" || reply != "Refunds are possible within 30 days." || !strings.Contains(string(rationale), "meets every success condition") {
				t.Errorf("returns: %s, reply %q, %s", run.Status, reply, rationale)
			}
		case receipt:
			if run.Status != "failed" || !strings.Contains(string(rationale), `\"receipt\" (reply: not \"receipt\")`) {
				t.Errorf("receipt: %s, reply %q, %s", run.Status, reply, rationale)
			}
		case generic:
			if run.Status != "failed" || run.ConditionResult.Result != "unknown" ||
				!strings.Contains(run.ConditionResult.Rationale.Summary, `cannot check the success condition "The agent answers correctly."`) {
				t.Errorf("generic: %s, reply %q, %s", run.Status, reply, rationale)
			}
		case twoSubjects:
			if run.Status != "failed" || strings.Contains(string(rationale), "contradicts") ||
				!strings.Contains(run.ConditionResult.Rationale.Summary, `"The agent says delivery takes three days": the reply does not say most of it`) {
				t.Errorf("two subjects: %s, reply %q, %s", run.Status, reply, rationale)
			}
		case examplesOnly:
			if run.Status != "failed" || run.ConditionResult.Result != "unknown" ||
				!strings.Contains(run.ConditionResult.Rationale.Summary, "not alike enough to any success example to be judged by them (closest #1") {
				t.Errorf("examples only: %s, reply %q, %s", run.Status, reply, rationale)
			}
		}
	}
}
