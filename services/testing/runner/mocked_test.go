package runner

import (
	"reflect"
	"strings"
	"testing"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// An llm test with mocks (as a test made from a production conversation
// has) answers the agent's tool calls from them, runs the agent's turn to
// what it says, and records the calls and results in agent_responses.
func TestLLMTestWithMocksAnswersToolCalls(t *testing.T) {
	const ask = `{"role":"user","message":"Could you book a table for 4 guests, date friday?","time_in_call_secs":3}`
	cases := []struct {
		name, body, status string
		transcript         []string
	}{
		{"a production mock answers the call; the reply states its result",
			`{"type":"llm","name":"n","chat_history":[` + ask + `],"success_condition":"Booked a table for 4 guests on friday, reference BK-7",
			  "tool_mock_config":{"mocking_strategy":"all","fallback_strategy":"raise_error"},
			  "tool_mock_overrides":{"book_table":[{"parameter_conditions":[],"mock_result":"Booked a table for 4 guests on friday, reference BK-7.","is_error":false}]}}`,
			domain.RunPassed,
			[]string{bookCall, "result book_table: Booked a table for 4 guests on friday, reference BK-7.", "agent: Booked a table for 4 guests on friday, reference BK-7."}},
		{"a call no mock matches is an error the agent reports",
			`{"type":"llm","name":"n","chat_history":[` + ask + `],"success_condition":"reference BK-7",
			  "tool_mock_overrides":{"book_table":[{"parameter_conditions":[{"path":"guests","eval":{"type":"exact","expected_value":"6"}}],"mock_result":"BK-7"}]}}`,
			domain.RunFailed,
			[]string{bookCall, "error book_table: Error: no mock matched for tool 'book_table'.", "agent: I'm sorry, that did not work: Error: no mock matched for tool 'book_table'."}},
		{"without mocks the reply is the call itself, as before",
			`{"type":"llm","name":"n","chat_history":[` + ask + `],"success_condition":"reference BK-7"}`,
			domain.RunFailed, []string{bookCall}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, got := offlineRun(t, domain.TypeLLM, c.body, c.status)
			if !reflect.DeepEqual(got, c.transcript) {
				t.Fatalf("transcript:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.transcript, "\n"))
			}
		})
	}
}
