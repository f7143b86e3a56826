package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
	"github.com/voiceai-platform/voiceai/services/testing/offline"
)

// lines is a transcript as "role: text" lines, tool calls as
// "call name args" and results as "result name: value" (or "error …").
// offlineRun executes a test of typ on the offline model, checks that it
// ends in status without an error, and returns the result and its
// transcript, a line a message.
func offlineRun(t *testing.T, typ, body, status string) (*testingv1.RunResult, []string) {
	t.Helper()
	e := &Executor{Model: offline.Model{}, Now: fixedClock()}
	res := e.Execute(context.Background(), newRun(t, typ, body))
	got := lines(responses(t, res))
	if res.GetStatus() != status || res.GetError() != "" {
		t.Fatalf("status %q (%s %q), want %q; transcript:\n%s", res.GetStatus(), res.GetRationaleSummary(),
			res.GetRationaleMessages(), status, strings.Join(got, "\n"))
	}
	return res, got
}

func lines(msgs []agentMessage) []string {
	var out []string
	for _, m := range msgs {
		if m.Message != "" {
			out = append(out, m.Role+": "+m.Message)
		}
		for _, c := range m.ToolCalls {
			out = append(out, "call "+c.ToolName+" "+c.ParamsAsJSON)
		}
		for _, r := range m.ToolResults {
			kind := "result"
			if r.IsError {
				kind = "error"
			}
			out = append(out, kind+" "+r.ToolName+": "+r.ResultValue)
		}
	}
	return out
}

// bookingScenario asks three things the bookings agent (agentConfig)
// covers: its hours, its refund rule, and a booking through its tool.
const bookingScenario = `You are Ann, a regular guest. You want to know the opening hours. ` +
	`Then ask about refunds for cancelled bookings. Finally ask the agent to book a table for 4 guests, date friday.`

func simTest(extra string) string {
	return `{"type":"simulation","name":"sim","simulation_scenario":"` + bookingScenario + `",
		"success_conditions":["states the opening hours nine to five","books a table for 4 guests"]` + extra + `}`
}

const (
	bookedMock = `"tool_mock_overrides":{"tool_7f3a":[
		{"parameter_conditions":[{"path":"guests","eval":{"type":"exact","expected_value":"4"}},{"path":"date","eval":{"type":"regex","pattern":"^fri"}}],
		 "mock_result":"Booked a table for 4 guests on friday, reference BK-1."}]}`
	hello    = "agent: Hello guest, how can I help?"
	askHours = "user: I want to know the opening hours."
	hours    = "agent: Our opening hours are nine to five every weekday."
	askRef   = "user: Can you tell me about refunds for cancelled bookings?"
	refunds  = "agent: Refunds are never given for cancelled bookings."
	askBook  = "user: Could you book a table for 4 guests, date friday?"
	bookCall = `call book_table {"date":"friday","guests":4}`
	done     = "user: Thank you, that's all."
)

func TestSimulationOffline(t *testing.T) {
	notMocked := func(how string) []string {
		return []string{hello, askHours, hours, askRef, refunds, askBook, bookCall,
			"error book_table: " + how, "agent: I'm sorry, that did not work: " + how,
			"user: Sorry, that doesn't answer my question. Could you book a table for 4 guests, date friday?", bookCall,
			"error book_table: " + how, "agent: I'm sorry, that did not work: " + how, done}
	}
	cases := []struct {
		name       string
		body       string
		status     string
		transcript []string
		messages   []string // in the rationale, in order
	}{
		{"three turns until the goal and every ask are covered; a matching mock answers the tool",
			simTest("," + bookedMock), domain.RunPassed,
			[]string{hello, askHours, hours, askRef, refunds, askBook, bookCall,
				"result book_table: Booked a table for 4 guests on friday, reference BK-1.",
				"agent: Booked a table for 4 guests on friday, reference BK-1.", done},
			[]string{"Simulation: 3 agent turn(s); the simulated user ended the conversation.",
				`Condition "states the opening hours nine to five": met: the reply says it: opening, nine, five.`,
				`Condition "books a table for 4 guests": met: the reply says it: books, table, guests, 4.`}},
		{"max turns reached before the booking", simTest(`,"simulation_max_turns":2,` + bookedMock), domain.RunFailed,
			[]string{hello, askHours, hours, askRef, refunds},
			[]string{"Simulation: 2 agent turn(s); simulation_max_turns (2) reached before the simulated user was done.",
				`Condition "states the opening hours nine to five": met: the reply says it: opening, nine, five.`,
				`Condition "books a table for 4 guests": not met: the reply contradicts the condition: "books" (reply: not "bookings").`}},
		{"a mock whose conditions do not match falls back to an error; the user repeats once, then ends",
			simTest(`,"tool_mock_overrides":{"tool_7f3a":[{"parameter_conditions":[{"path":"guests","eval":{"type":"exact","expected_value":"6"}}],"mock_result":"Booked for 6."}]}`),
			domain.RunFailed, notMocked("Error: no mock matched for tool 'book_table'."), nil},
		{"call_real_tool cannot call a real tool: an error saying so",
			simTest(`,"tool_mock_config":{"fallback_strategy":"call_real_tool"},"tool_mock_overrides":{}`),
			domain.RunFailed, notMocked("Error: no mock matched for tool 'book_table', and the real tool cannot be called from a test run (the runner has no network tools)."), nil},
		{"an is_error mock is an error result",
			simTest(`,"tool_mock_overrides":{"book_table":[{"mock_result":"Fully booked on friday.","is_error":true}]}`),
			domain.RunFailed, notMocked("Fully booked on friday."), nil},
		{"selected strategy: a tool not in mocked_tool_ids is not mocked",
			simTest(`,"tool_mock_config":{"mocking_strategy":"selected","mocked_tool_ids":["tool_other"]},` + bookedMock),
			domain.RunFailed, notMocked("Error: tool 'book_table' is not mocked in this test."), nil},
		{"selected strategy: a tool selected by id is mocked",
			simTest(`,"tool_mock_config":{"mocking_strategy":"selected","mocked_tool_ids":["tool_7f3a"]},` + bookedMock),
			domain.RunPassed, nil, nil},
		{"selected strategy: a tool selected by name is mocked, mocks keyed by name too",
			simTest(`,"tool_mock_config":{"mocking_strategy":"selected","mocked_tool_ids":["book_table"]},` +
				strings.Replace(bookedMock, "tool_7f3a", "book_table", 1)),
			domain.RunPassed, nil, nil},
		{"none strategy: nothing is mocked", simTest(`,"tool_mock_config":{"mocking_strategy":"none"},` + bookedMock),
			domain.RunFailed, notMocked("Error: tool 'book_table' is not mocked in this test."), nil},
		{"the chat history is where the simulation starts; it is not repeated in the transcript",
			`{"type":"simulation","name":"sim","simulation_scenario":"Then ask about refunds for cancelled bookings.","success_condition":"refunds are never given",
			  "chat_history":[{"role":"agent","message":"Hi!","time_in_call_secs":1},{"role":"user","message":"What are your opening hours?","time_in_call_secs":10}]}`,
			domain.RunPassed, []string{hours, askRef, refunds, done}, nil},
		{"without a scenario the user has nothing to ask", `{"type":"simulation","name":"sim","success_condition":"greets"}`,
			domain.RunPassed, []string{hello, done}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, got := offlineRun(t, domain.TypeSimulation, c.body, c.status)
			if c.transcript != nil && !reflect.DeepEqual(got, c.transcript) {
				t.Fatalf("transcript:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.transcript, "\n"))
			}
			if c.messages != nil && !reflect.DeepEqual(res.GetRationaleMessages(), c.messages) {
				t.Fatalf("rationale %q\nwant      %q", res.GetRationaleMessages(), c.messages)
			}
		})
	}
}

func TestSimulationTranscriptShape(t *testing.T) {
	e := &Executor{Model: offline.Model{}, Now: fixedClock()}
	res := e.Execute(context.Background(), newRun(t, domain.TypeSimulation, simTest(","+bookedMock)))
	msgs := responses(t, res)
	for i, m := range msgs {
		if m.TimeInCallSecs != int64(i+1) || (m.Role != "user" && m.Role != "agent") || m.ToolCalls == nil {
			t.Fatalf("message %d: %+v", i, m)
		}
	}
	call, result := msgs[6], msgs[7]
	if len(call.ToolCalls) != 1 || len(result.ToolResults) != 1 || result.ToolResults[0].RequestID != call.ToolCalls[0].RequestID ||
		result.Role != "agent" || result.Message != "" {
		t.Fatalf("call %+v, result %+v", call, result)
	}
	// The judge model played the user (4 turns) and judged; the agent's
	// model made its 4 replies, each timed.
	if u, a := res.GetUsage(), res.GetAgentUsage(); u.GetModelCalls() != 5 || u.GetProvider() != "offline" || a.GetModelCalls() != 4 || len(res.GetAgentTurnMs()) != 4 {
		t.Fatalf("usage %+v, agent %+v, turns %v", u, a, res.GetAgentTurnMs())
	}
}

func TestSimulationIsDeterministicOffline(t *testing.T) {
	var first *testingv1.RunResult
	for i := range 5 {
		e := &Executor{Model: offline.Model{}, Now: fixedClock()}
		res := e.Execute(context.Background(), newRun(t, domain.TypeSimulation, simTest(","+bookedMock)))
		if i == 0 {
			first = res
			continue
		}
		if !bytes.Equal(res.GetAgentResponsesJson(), first.GetAgentResponsesJson()) || res.GetRationaleSummary() != first.GetRationaleSummary() ||
			!reflect.DeepEqual(res.GetRationaleMessages(), first.GetRationaleMessages()) || res.GetStatus() != first.GetStatus() {
			t.Fatalf("run %d differs:\n%s\n%s", i, res.GetAgentResponsesJson(), first.GetAgentResponsesJson())
		}
	}
}

func TestSimulationWithScriptedModels(t *testing.T) {
	t.Run("the user and the judge see the scenario and the whole conversation", func(t *testing.T) {
		turn := 0
		m := &scripted{user: func(_ context.Context, in UserInput) (UserTurn, Usage, error) {
			turn++
			if turn == 3 {
				return UserTurn{Text: "Bye.", Done: true}, Usage{Calls: 1}, nil
			}
			return UserTurn{Text: "What are your opening hours?"}, Usage{Calls: 1}, nil
		}}
		res := (&Executor{Now: time.Now, Model: m}).Execute(context.Background(), newRun(t, domain.TypeSimulation, simTest("")))
		if len(m.users) != 3 || m.users[0].Scenario != bookingScenario || len(m.users[0].Transcript) != 1 || len(m.users[2].Transcript) != 5 {
			t.Fatalf("user inputs %+v", m.users)
		}
		j := m.judgements[0]
		if !j.Simulation || len(j.Transcript) != 6 || j.Transcript[5].Text != "Bye." || j.Reply.Text != "Our opening hours are nine to five every weekday." ||
			!reflect.DeepEqual(j.Conditions, []string{"states the opening hours nine to five", "books a table for 4 guests"}) {
			t.Fatalf("judge input %+v", j)
		}
		if got := lines(responses(t, res)); len(got) != 6 || got[5] != "user: Bye." {
			t.Fatalf("transcript %q", got)
		}
	})
	t.Run("at most five tool calls per agent turn", func(t *testing.T) {
		m := replies(Call{ID: "c1", Name: "book_table", Arguments: `{"guests":4}`})
		res := (&Executor{Now: time.Now, Model: m}).Execute(context.Background(), newRun(t, domain.TypeSimulation, simTest(`,"simulation_max_turns":1,`+bookedMock)))
		got := lines(responses(t, res))
		calls := 0
		for _, l := range got {
			if strings.HasPrefix(l, "call ") {
				calls++
			}
		}
		// The agent's first message is model-free; then one agent turn: 5 calls.
		if calls != maxToolCallsPerTurn || len(m.convs) != maxToolCallsPerTurn || got[len(got)-1] != "error book_table: Error: no mock matched for tool 'book_table'." {
			t.Fatalf("%d calls, %d agent model calls:\n%s", calls, len(m.convs), strings.Join(got, "\n"))
		}
		// The agent saw each result as a tool turn after its call.
		last := m.convs[len(m.convs)-1].Turns
		if tt := last[len(last)-1]; tt.Role != "tool" || tt.ToolCallID != "c1" || !tt.IsError {
			t.Fatalf("last turn the agent saw: %+v", tt)
		}
	})
	t.Run("a failing user model fails the run and keeps the conversation so far", func(t *testing.T) {
		turn := 0
		m := &scripted{user: func(_ context.Context, in UserInput) (UserTurn, Usage, error) {
			if turn++; turn == 2 {
				return UserTurn{}, Usage{}, errors.New("boom")
			}
			return UserTurn{Text: "What are your opening hours?"}, Usage{Calls: 1}, nil
		}}
		res := (&Executor{Now: time.Now, Model: m}).Execute(context.Background(), newRun(t, domain.TypeSimulation, simTest("")))
		if res.GetStatus() != domain.RunFailed || res.GetError() != "The model failed: boom" || len(responses(t, res)) != 3 {
			t.Fatalf("%s %q %s", res.GetStatus(), res.GetError(), res.GetAgentResponsesJson())
		}
	})
}

func TestMockMatches(t *testing.T) {
	p := func(path, eval string) domain.ToolParam {
		var e domain.ParamEval
		_ = json.Unmarshal([]byte(eval), &e)
		return domain.ToolParam{Path: &path, Eval: &e}
	}
	args := `{"guests":4,"date":"friday","who":{"name":"Ann"}}`
	cases := []struct {
		conds []domain.ToolParam
		args  string
		want  bool
	}{
		{nil, "not json", true},
		{[]domain.ToolParam{p("guests", `{"type":"exact","expected_value":"4"}`)}, args, true},
		{[]domain.ToolParam{p("guests", `{"type":"exact","expected_value":"5"}`)}, args, false},
		{[]domain.ToolParam{p("who.name", `{"type":"regex","pattern":"^A"}`), p("date", `{"type":"anything"}`)}, args, true},
		{[]domain.ToolParam{p("date", `{"type":"anything"}`), p("time", `{"type":"anything"}`)}, args, false},
		{[]domain.ToolParam{p("date", `{"type":"llm","description":"a weekday"}`)}, args, true},
		{[]domain.ToolParam{p("time", `{"type":"llm","description":"a time"}`)}, args, false},
		{[]domain.ToolParam{p("date", `{"type":"anything"}`)}, "not json", false},
	}
	for i, c := range cases {
		if got := mockMatches(c.conds, c.args); got != c.want {
			t.Errorf("case %d: %v, want %v", i, got, c.want)
		}
	}
}
