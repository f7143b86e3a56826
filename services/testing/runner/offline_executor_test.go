package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/agentconfig"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
	"github.com/voiceai-platform/voiceai/services/testing/offline"
)

func agentTurn(s string) Turn { return Turn{Role: "agent", Text: s} }

func TestSubstitute(t *testing.T) {
	vars := map[string]string{"customer": "Ann", "n": "3", "a.b": "dotted", "empty": ""}
	cases := []struct{ in, want string }{
		{"Hello {{customer}}!", "Hello Ann!"},
		{"Hello {{ customer }}, {{n}} guests", "Hello Ann, 3 guests"},
		{"{{customer}}{{customer}}", "AnnAnn"},
		{"{{a.b}} and {{empty}}.", "dotted and ."},
		{"Unknown {{nobody}} stays", "Unknown {{nobody}} stays"},
		{"Not a {placeholder} or {{ two words }}", "Not a {placeholder} or {{ two words }}"},
		{"", ""},
	}
	for _, c := range cases {
		if got := Substitute(c.in, vars); got != c.want {
			t.Errorf("Substitute(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestParseAgentConfig(t *testing.T) {
	cfg := ParseAgentConfig([]byte(`{"agent":{"first_message":"Hi {{customer}}",
		"dynamic_variables":{"dynamic_variable_placeholders":{"customer":"guest","n":3,"vip":true,"none":null,"obj":{"a":1}}},
		"prompt":{"prompt":"Be kind.","llm":"gpt-4o-mini","tools":[
			{"id":"t1","name":"book_table","description":"Book","parameters":{"type":"object"}},
			{"name":"webhook","api_schema":{"request_body_schema":{"properties":{"x":{}}}}},
			{"description":"nameless, skipped"},
			"not an object"]}}}`))
	want := AgentConfig{
		SystemPrompt: "Be kind.", FirstMessage: "Hi {{customer}}", LLM: "gpt-4o-mini",
		DynamicVariables: map[string]string{"customer": "guest", "n": "3", "vip": "true", "none": "", "obj": `{"a":1}`},
		Tools: []Tool{
			{ID: "t1", Name: "book_table", Description: "Book", Parameters: json.RawMessage(`{"type":"object"}`)},
			{Name: "webhook", Parameters: json.RawMessage(`{"properties":{"x":{}}}`)},
		},
		Model: agentconfig.Prompt{LLM: "gpt-4o-mini"},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("config\n got  %+v\n want %+v", cfg, want)
	}
	for _, bad := range [][]byte{nil, []byte("not json"), []byte(`{"agent":"x"}`)} {
		if c := ParseAgentConfig(bad); c.SystemPrompt != "" || c.DynamicVariables == nil || len(c.Tools) != 0 {
			t.Fatalf("ParseAgentConfig(%q) = %+v", bad, c)
		}
	}
}

func TestUsageAdd(t *testing.T) {
	u := Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3, Calls: 1}
	u.Add(Usage{PromptTokens: 10, CompletionTokens: 20, TotalTokens: 30, Calls: 2})
	if u != (Usage{PromptTokens: 11, CompletionTokens: 22, TotalTokens: 33, Calls: 3}) {
		t.Fatalf("%+v", u)
	}
}

// refundAgent is the new user's agent: its prompt states the refund
// policy, and nothing about shipping.
const refundAgent = `{"agent":{"first_message":"Hi {{customer}}, this is Acme support. How can I help?",
	"dynamic_variables":{"dynamic_variable_placeholders":{"customer":"there"}},
	"prompt":{"prompt":"You are the support agent of {{shop}}, a shoe shop.\n\n## Refund policy\n- Refunds are possible within 30 days with a receipt.\n- Cancelled orders are refunded in full.\n\nOur store is open nine to five on weekdays.",
	  "tools":[{"name":"track_order","description":"Look up where an order is","parameters":{"type":"object","properties":{"order_id":{"type":"string"}}}}]}}}`

func refundRun(t *testing.T, body string) Run {
	t.Helper()
	return Run{
		Invocation: &testingv1.Invocation{InvocationId: "tinv_r", WorkspaceId: "ws_1", AgentId: "agent_r", RepeatCount: 1},
		Test:       &testingv1.PlannedTest{TestId: "test_r", TestType: domain.TypeLLM},
		Definition: testDef(t, body), AgentConfig: []byte(refundAgent), RunID: domain.RunID("tinv_r", 0), WorkerID: "wrk_1",
	}
}

func llmTest(question, condition string) string {
	return fmt.Sprintf(`{"type":"llm","name":"t","dynamic_variables":{"shop":"Acme"},
	  "chat_history":[{"role":"user","message":%q,"time_in_call_secs":1}],"success_condition":%q}`, question, condition)
}

// TestOfflineAnswersFromTheConfiguration runs llm tests against an agent
// whose prompt states a refund policy, end to end through the executor.
func TestOfflineAnswersFromTheConfiguration(t *testing.T) {
	cases := []struct {
		name        string
		body        string
		status      string
		reply       string
		summaryHas  string
		messagesHas string
	}{
		{"the condition the prompt states passes",
			llmTest("Can I get a refund?", "The agent explains the refund policy: 30 days with a receipt"),
			domain.RunPassed, "Refunds are possible within 30 days with a receipt. Cancelled orders are refunded in full.",
			"meets every success condition",
			`met: the reply says it: refund, receipt, 30 days`},
		{"plurals and other forms of a word match",
			llmTest("What happens when I cancel an order?", "Says cancellations get refunds"),
			domain.RunPassed, "Cancelled orders are refunded in full.", "", "met: the reply says it: cancellations, refunds"},
		{"the heading's words find the sentences under it",
			llmTest("What is your policy?", "states the 30 days refund policy"),
			domain.RunPassed, "Refunds are possible within 30 days with a receipt. Cancelled orders are refunded in full.", "", "met: the reply says it: refund, 30 days"},
		{"a number the reply does not state fails",
			llmTest("Can I get a refund?", "The agent says refunds are possible within 60 days"),
			domain.RunFailed, "Refunds are possible within 30 days with a receipt. Cancelled orders are refunded in full.",
			`does not meet the success condition "The agent says refunds are possible within 60 days": the reply contradicts the condition: "60 days" (reply: "30 days")`,
			`not met: the reply contradicts the condition: "60 days" (reply: "30 days")`},
		{"number words are numbers",
			llmTest("When is the store open?", "says the store opens at 9 and closes at 5"),
			domain.RunPassed, "Our store is open nine to five on weekdays.", "", "met: the reply says it: store, opens, 9, 5"},
		{"a question the configuration does not cover fails, saying so",
			llmTest("Do you ship to Canada?", "The agent says we ship to Canada"),
			domain.RunFailed, offline.Refusal,
			`Offline judge: the agent's configuration does not cover the question "Do you ship to Canada?"`, "(looked for: ship, canada)"},
		{"a refusal meets a condition that asks for one",
			llmTest("Can you give me legal advice?", "The agent declines: legal advice is not in its instructions"),
			domain.RunPassed, offline.Refusal, "", "the condition asks the agent to decline, and the reply declines"},
		{"a greeting gets the first message",
			llmTest("Good morning!", "greets the customer and offers help"),
			domain.RunPassed, "Hi there, this is Acme support. How can I help?", "", "met: the reply says it: greets, help"},
		{"an action a tool covers is a tool call",
			llmTest("Where is my order? order_id A17", "tracks the order"),
			domain.RunPassed, "", "", "met: the reply says it: tracks, order"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := (&Executor{Now: time.Now, Model: offline.Model{}}).Execute(context.Background(), refundRun(t, c.body))
			if res.GetStatus() != c.status || res.GetError() != "" {
				t.Fatalf("status %q (want %q) error %q: %s %q", res.GetStatus(), c.status, res.GetError(), res.GetRationaleSummary(), res.GetRationaleMessages())
			}
			if m := responses(t, res); len(m) != 1 || m[0].Message != c.reply {
				t.Fatalf("reply %s, want %q", res.GetAgentResponsesJson(), c.reply)
			}
			if !strings.Contains(res.GetRationaleSummary(), c.summaryHas) {
				t.Fatalf("summary %q lacks %q", res.GetRationaleSummary(), c.summaryHas)
			}
			if all := strings.Join(res.GetRationaleMessages(), "\n"); !strings.Contains(all, c.messagesHas) {
				t.Fatalf("messages %q lack %q", res.GetRationaleMessages(), c.messagesHas)
			}
		})
	}
}

// The same test on the same agent gives byte-identical results.
func TestOfflineResultsAreByteIdentical(t *testing.T) {
	e := &Executor{Model: offline.Model{}, Now: func() time.Time { return time.Unix(1, 0) }}
	for _, body := range []string{
		llmTest("Can I get a refund?", "The agent explains the refund policy: 30 days with a receipt"),
		llmTest("Can I get a refund?", "refunds within 60 days, with receipts, for cancelled orders, on weekdays"),
		llmTest("Do you ship to Canada?", "ships to Canada"),
		llmTest("Hello", "greets"),
	} {
		var first []byte
		for i := range 2 {
			offline.ResetCaches() // the second run works the answer out again
			res := e.Execute(context.Background(), refundRun(t, body))
			if len(res.AgentTurnMs) != 1 {
				t.Fatalf("turn timings %v", res.AgentTurnMs)
			}
			res.AgentTurnMs, res.AgentFirstTokenMs = nil, nil // measured: the only things that may differ
			b, err := proto.MarshalOptions{Deterministic: true}.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				first = b
			} else if !bytes.Equal(b, first) {
				t.Fatalf("%s: the second result differs", body)
			}
		}
	}
}
