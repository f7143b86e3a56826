package runner

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
	"github.com/voiceai-platform/voiceai/services/testing/offline"
)

// agentConfig is the bookings agent of the platform's end-to-end test.
const agentConfig = `{"agent":{"first_message":"Hello {{customer}}, how can I help?",
	"dynamic_variables":{"dynamic_variable_placeholders":{"customer":"guest","city":"Paris"}},
	"prompt":{"prompt":"You help {{customer}} book tables in {{city}}. Our opening hours are nine to five every weekday. Refunds are never given for cancelled bookings.",
	  "llm":"gpt-4o-mini",
	  "tools":[{"id":"tool_7f3a","type":"client","name":"book_table","description":"Book a table reservation for guests",
	    "parameters":{"type":"object","properties":{"guests":{"type":"number"},"date":{"type":"string"}}}}]}}}`

// testDef decodes a test body as the API does and checks it is valid.
func testDef(t *testing.T, body string) domain.TestInput {
	t.Helper()
	in, err := domain.ParseDefinition([]byte(body))
	if err != nil {
		t.Fatalf("definition: %v", err)
	}
	return in
}

func newRun(t *testing.T, typ, body string) Run {
	t.Helper()
	return Run{
		Invocation: &testingv1.Invocation{InvocationId: "tinv_abc", WorkspaceId: "ws_1", AgentId: "agent_1", RepeatCount: 3},
		Test:       &testingv1.PlannedTest{TestId: "test_1", TestType: typ, WorkflowNodeId: "node_1"},
		Definition: testDef(t, body), AgentConfig: []byte(agentConfig), BranchID: "br_1",
		RunID: domain.RunID("tinv_abc", 5), Index: 5, Attempt: 2, WorkerID: "wrk_1",
	}
}

// fixedClock returns t0, t0+1s, t0+2s, ...
func fixedClock() func() time.Time {
	var mu sync.Mutex
	t := time.UnixMilli(1_700_000_000_000)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now := t
		t = t.Add(time.Second)
		return now
	}
}

// scripted is a Model whose replies are given; it records what it saw.
type scripted struct {
	respond    func(ctx context.Context, c Conversation) (Turn, Usage, error)
	judge      func(ctx context.Context, in JudgeInput) (Verdict, Usage, error)
	user       func(ctx context.Context, in UserInput) (UserTurn, Usage, error)
	mu         sync.Mutex
	users      []UserInput
	convs      []Conversation
	judgements []JudgeInput
}

func (s *scripted) Provider() string  { return "scripted" }
func (s *scripted) ModelName() string { return "scripted-1" }

func (s *scripted) Respond(ctx context.Context, c Conversation) (Turn, Usage, error) {
	return answer(ctx, s, &s.convs, c, s.respond, offline.Model{}.Respond)
}

func (s *scripted) SimulateUser(ctx context.Context, in UserInput) (UserTurn, Usage, error) {
	return answer(ctx, s, &s.users, in, s.user, offline.Model{}.SimulateUser)
}

func (s *scripted) Judge(ctx context.Context, in JudgeInput) (Verdict, Usage, error) {
	return answer(ctx, s, &s.judgements, in, s.judge, offline.Model{}.Judge)
}

// answer records in among seen, and answers with the test's script, or
// with the offline model where the test scripted none.
func answer[In, Out any](ctx context.Context, s *scripted, seen *[]In, in In, script, offline func(context.Context, In) (Out, Usage, error)) (Out, Usage, error) {
	s.mu.Lock()
	*seen = append(*seen, in)
	s.mu.Unlock()
	if script == nil {
		return offline(ctx, in)
	}
	return script(ctx, in)
}

func replies(calls ...Call) *scripted {
	return &scripted{respond: func(context.Context, Conversation) (Turn, Usage, error) {
		return Turn{Role: "agent", Calls: calls}, Usage{PromptTokens: 5, CompletionTokens: 2, TotalTokens: 7, Calls: 1}, nil
	}}
}

// agentMessage is a transcript message of a run's agent_responses.
type agentMessage struct {
	Role           string `json:"role"`
	Message        string `json:"message"`
	TimeInCallSecs int64  `json:"time_in_call_secs"`
	ToolCalls      []struct {
		RequestID    string `json:"request_id"`
		ToolName     string `json:"tool_name"`
		ParamsAsJSON string `json:"params_as_json"`
		Called       bool   `json:"tool_has_been_called"`
		Type         string `json:"type"`
	} `json:"tool_calls"`
	ToolResults []struct {
		RequestID   string `json:"request_id"`
		ToolName    string `json:"tool_name"`
		ResultValue string `json:"result_value"`
		IsError     bool   `json:"is_error"`
	} `json:"tool_results"`
	AgentMetadata map[string]string `json:"agent_metadata"`
	ProducingLLM  string            `json:"producing_llm"`
	SourceMedium  string            `json:"source_medium"`
}

func responses(t *testing.T, res *testingv1.RunResult) []agentMessage {
	t.Helper()
	var out []agentMessage
	if err := json.Unmarshal(res.GetAgentResponsesJson(), &out); err != nil {
		t.Fatalf("agent_responses_json %s: %v", res.GetAgentResponsesJson(), err)
	}
	return out
}

const hoursTest = `{"type":"llm","name":"Opening hours",
	"chat_history":[{"role":"user","message":"What are your opening hours?","time_in_call_secs":3}],
	"success_condition":"The agent states the opening hours nine to five",
	"success_examples":[{"response":"We are open nine to five every weekday.","type":"success"}],
	"failure_examples":[{"response":"I do not know.","type":"failure"}]}`

const refundTest = `{"type":"llm","name":"Refund promise",
	"chat_history":[{"role":"user","message":"Will I get a refund for cancelled bookings?","time_in_call_secs":2.5}],
	"success_examples":[{"response":"Yes, you will get a full refund right away.","type":"success"}],
	"failure_examples":[{"response":"Refunds are never given for cancelled bookings.","type":"failure"}]}`

func TestExecuteOfflinePassingLLMTest(t *testing.T) {
	e := &Executor{Model: offline.Model{}, Now: fixedClock()}
	res := e.Execute(context.Background(), newRun(t, domain.TypeLLM, hoursTest))

	if res.GetStatus() != domain.RunPassed || res.GetConditionResult() != domain.ConditionSuccess || res.GetError() != "" {
		t.Fatalf("status %q result %q error %q: %s", res.GetStatus(), res.GetConditionResult(), res.GetError(), res.GetRationaleSummary())
	}
	if !strings.Contains(res.GetRationaleSummary(), "meets every success condition") || !slices.ContainsFunc(res.GetRationaleMessages(), func(m string) bool {
		return strings.HasPrefix(m, `Condition "The agent states the opening hours nine to five": met`)
	}) {
		t.Fatalf("rationale %q %q", res.GetRationaleSummary(), res.GetRationaleMessages())
	}
	// Identity and position: run 5 with repeat 3 is test 1, repetition 2.
	if res.GetRunId() != "trun_abc_5" || res.GetInvocationId() != "tinv_abc" || res.GetWorkspaceId() != "ws_1" || res.GetTestId() != "test_1" ||
		res.GetTestIndex() != 1 || res.GetRepeatIndex() != 2 || res.GetAttempt() != 2 || res.GetWorkerId() != "wrk_1" {
		t.Fatalf("identity %+v", res)
	}
	if res.GetStartedAtUnixMs() != 1_700_000_000_000 || res.GetFinishedAtUnixMs() != 1_700_000_001_000 {
		t.Fatalf("times %d %d", res.GetStartedAtUnixMs(), res.GetFinishedAtUnixMs())
	}
	// The offline model judged and played the agent: one call each.
	for _, u := range []*testingv1.ModelUsage{res.GetUsage(), res.GetAgentUsage()} {
		if u.GetProvider() != "offline" || u.GetModel() != "offline-v2" || u.GetModelCalls() != 1 ||
			u.GetTotalTokens() != u.GetPromptTokens()+u.GetCompletionTokens() {
			t.Fatalf("usage %+v", u)
		}
	}
	if res.GetAgentUsage().GetPromptTokens() == 0 {
		t.Fatalf("agent usage %+v", res.GetAgentUsage())
	}
	if len(res.GetAgentTurnMs()) != 1 {
		t.Fatalf("agent turn timings %v", res.GetAgentTurnMs())
	}
	msgs := responses(t, res)
	if len(msgs) != 1 {
		t.Fatalf("agent responses %s", res.GetAgentResponsesJson())
	}
	m := msgs[0]
	if m.Role != "agent" || m.Message != "Our opening hours are nine to five every weekday." || m.TimeInCallSecs != 4 ||
		m.ProducingLLM != "offline-v2" || m.SourceMedium != "text" || len(m.ToolCalls) != 0 ||
		!reflect.DeepEqual(m.AgentMetadata, map[string]string{"agent_id": "agent_1", "branch_id": "br_1", "workflow_node_id": "node_1", "version_id": ""}) {
		t.Fatalf("agent response %+v", m)
	}
}

func TestExecuteOfflineFailingLLMTest(t *testing.T) {
	e := &Executor{Now: time.Now, Model: offline.Model{}}
	res := e.Execute(context.Background(), newRun(t, domain.TypeLLM, refundTest))
	if res.GetStatus() != domain.RunFailed || res.GetConditionResult() != domain.ConditionFailure || res.GetError() != "" {
		t.Fatalf("status %q result %q error %q", res.GetStatus(), res.GetConditionResult(), res.GetError())
	}
	if !strings.Contains(res.GetRationaleSummary(), "closer in meaning to failure example #1 (1.00)") {
		t.Fatalf("rationale %q", res.GetRationaleSummary())
	}
	// time_in_call_secs of the reply follows the last turn (2.5 s).
	if m := responses(t, res); m[0].Message != "Refunds are never given for cancelled bookings." || m[0].TimeInCallSecs != 3 {
		t.Fatalf("agent response %+v", m)
	}
}

func TestExecuteIsDeterministicOffline(t *testing.T) {
	e := &Executor{Model: offline.Model{}, Now: func() time.Time { return time.Unix(1, 0) }}
	for _, body := range []string{hoursTest, refundTest} {
		first := e.Execute(context.Background(), newRun(t, domain.TypeLLM, body))
		for i := 0; i < 10; i++ {
			again := e.Execute(context.Background(), newRun(t, domain.TypeLLM, body))
			if again.GetStatus() != first.GetStatus() || again.GetRationaleSummary() != first.GetRationaleSummary() ||
				string(again.GetAgentResponsesJson()) != string(first.GetAgentResponsesJson()) ||
				!reflect.DeepEqual(again.GetRationaleMessages(), first.GetRationaleMessages()) {
				t.Fatalf("run %d differs", i)
			}
		}
	}
}

func TestExecuteBuildsTheConversation(t *testing.T) {
	cases := []struct {
		name       string
		body       string
		wantPrompt string
		wantTurns  []Turn
	}{
		{"placeholders from the agent; first message before a user turn",
			`{"type":"llm","name":"x","success_condition":"c","chat_history":[{"role":"user","message":"Hi","time_in_call_secs":1}]}`,
			"You help guest book tables in Paris. Our opening hours are nine to five every weekday. Refunds are never given for cancelled bookings.",
			[]Turn{{Role: "agent", Text: "Hello guest, how can I help?"}, {Role: "user", Text: "Hi"}}},
		{"the test's dynamic variables win, whatever their JSON type",
			`{"type":"llm","name":"x","success_condition":"c","dynamic_variables":{"customer":"Ann","city":42,"extra":"unused"},
			  "chat_history":[{"role":"user","message":"Hi","time_in_call_secs":1}]}`,
			"You help Ann book tables in 42. Our opening hours are nine to five every weekday. Refunds are never given for cancelled bookings.",
			[]Turn{{Role: "agent", Text: "Hello Ann, how can I help?"}, {Role: "user", Text: "Hi"}}},
		{"no first message when the history starts with the agent",
			`{"type":"llm","name":"x","success_condition":"c","chat_history":[
			  {"role":"agent","message":"Bonjour","time_in_call_secs":0},
			  {"role":"user","message":"Book","time_in_call_secs":1},
			  {"role":"agent","time_in_call_secs":2,"tool_calls":[{"request_id":"r1","tool_name":"book_table","params_as_json":"{\"guests\":2}"}]}]}`,
			"You help guest book tables in Paris. Our opening hours are nine to five every weekday. Refunds are never given for cancelled bookings.",
			[]Turn{{Role: "agent", Text: "Bonjour"}, {Role: "user", Text: "Book"},
				{Role: "agent", Calls: []Call{{ID: "r1", Name: "book_table", Arguments: `{"guests":2}`}}},
				{Role: "tool", ToolCallID: "r1", ToolName: "book_table", Text: "No result was recorded for this call."}}},
		{"every tool call is followed by its recorded result, wherever the history carries it",
			`{"type":"llm","name":"x","success_condition":"c","chat_history":[
			  {"role":"user","message":"Book for two, then for four","time_in_call_secs":1},
			  {"role":"agent","message":"One moment.","time_in_call_secs":2,"tool_calls":[
			    {"request_id":"r1","tool_name":"book_table","params_as_json":"{\"guests\":2}"},
			    {"tool_name":"book_table","params_as_json":"{\"guests\":4}"}],
			   "tool_results":[{"request_id":"r1","tool_name":"book_table","result_value":"booked","is_error":false}]},
			  {"role":"agent","time_in_call_secs":3,"tool_results":[{"tool_name":"book_table","result_value":"full","is_error":true}]},
			  {"role":"agent","message":"Done for two; four is full.","time_in_call_secs":4},
			  {"role":"user","message":"Thanks","time_in_call_secs":5}]}`,
			"You help guest book tables in Paris. Our opening hours are nine to five every weekday. Refunds are never given for cancelled bookings.",
			[]Turn{{Role: "agent", Text: "Hello guest, how can I help?"}, {Role: "user", Text: "Book for two, then for four"},
				{Role: "agent", Text: "One moment.", Calls: []Call{{ID: "r1", Name: "book_table", Arguments: `{"guests":2}`}, {ID: "call_1_1", Name: "book_table", Arguments: `{"guests":4}`}}},
				{Role: "tool", ToolCallID: "r1", ToolName: "book_table", Text: "booked"},
				{Role: "tool", ToolCallID: "call_1_1", ToolName: "book_table", Text: "full", IsError: true},
				{Role: "agent", Text: "Done for two; four is full."}, {Role: "user", Text: "Thanks"}}},
		{"an empty history gets the first message only",
			`{"type":"llm","name":"x","success_condition":"c"}`,
			"You help guest book tables in Paris. Our opening hours are nine to five every weekday. Refunds are never given for cancelled bookings.",
			[]Turn{{Role: "agent", Text: "Hello guest, how can I help?"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := &scripted{}
			(&Executor{Now: time.Now, Model: m}).Execute(context.Background(), newRun(t, domain.TypeLLM, c.body))
			if len(m.convs) != 1 {
				t.Fatalf("%d conversations", len(m.convs))
			}
			conv := m.convs[0]
			if conv.SystemPrompt != c.wantPrompt {
				t.Fatalf("prompt %q", conv.SystemPrompt)
			}
			if !reflect.DeepEqual(conv.Turns, c.wantTurns) {
				t.Fatalf("turns\n got  %+v\n want %+v", conv.Turns, c.wantTurns)
			}
			if conv.LLM != "gpt-4o-mini" || len(conv.Tools) != 1 || conv.Tools[0].Name != "book_table" {
				t.Fatalf("conversation %+v", conv)
			}
		})
	}
}

func TestExecuteFirstMessageIsTheReplyWhenNothingElseAnswers(t *testing.T) {
	res := (&Executor{Now: time.Now, Model: offline.Model{}}).Execute(context.Background(), newRun(t, domain.TypeLLM,
		`{"type":"llm","name":"x","dynamic_variables":{"customer":"Ann"},"success_condition":"greets Ann and offers help"}`))
	m := responses(t, res)
	if len(m) != 1 || m[0].Message != "Hello Ann, how can I help?" || m[0].TimeInCallSecs != 1 {
		t.Fatalf("agent responses %s", res.GetAgentResponsesJson())
	}
	if res.GetStatus() != domain.RunPassed {
		t.Fatalf("status %q: %s %q", res.GetStatus(), res.GetRationaleSummary(), res.GetRationaleMessages())
	}
}

func TestExecutePassesTheJudgeWhatItNeeds(t *testing.T) {
	m := &scripted{}
	(&Executor{Now: time.Now, Model: m}).Execute(context.Background(), newRun(t, domain.TypeLLM,
		`{"type":"llm","name":"s","success_condition":"first","success_conditions":["second","third"],
		  "success_examples":[{"response":"good","type":"success"},{"type":"success"}],
		  "failure_examples":[{"response":"bad","type":"failure"}],
		  "chat_history":[{"role":"user","message":"What are your opening hours?","time_in_call_secs":1}]}`))
	if len(m.judgements) != 1 {
		t.Fatalf("%d judgements", len(m.judgements))
	}
	j := m.judgements[0]
	if !reflect.DeepEqual(j.Conditions, []string{"first", "second", "third"}) ||
		!reflect.DeepEqual(j.SuccessExamples, []string{"good", ""}) || !reflect.DeepEqual(j.FailureExamples, []string{"bad"}) ||
		j.Reply.Text != "Our opening hours are nine to five every weekday." || len(j.Transcript) != 2 || j.Transcript[1].Text != "What are your opening hours?" {
		t.Fatalf("judge input %+v", j)
	}
}

func TestExecuteTimeLimit(t *testing.T) {
	blocking := &scripted{respond: func(ctx context.Context, _ Conversation) (Turn, Usage, error) {
		<-ctx.Done()
		return Turn{}, Usage{Calls: 1}, ctx.Err()
	}}
	// A model that ignores its context and answers late: the answer is
	// recorded, but the run still failed for the time limit.
	late := &scripted{respond: func(ctx context.Context, c Conversation) (Turn, Usage, error) {
		<-ctx.Done()
		return agentTurn("late answer"), Usage{Calls: 1}, nil
	}}
	slowJudge := &scripted{judge: func(ctx context.Context, _ JudgeInput) (Verdict, Usage, error) {
		<-ctx.Done()
		return Verdict{}, Usage{Calls: 1}, ctx.Err()
	}}
	cases := []struct {
		name      string
		model     Model
		limit     time.Duration
		wantLimit string
		wantReply string
	}{
		{"model blocks until the deadline", blocking, 5 * time.Millisecond, "5ms", ""},
		{"model answers after the deadline", late, 5 * time.Millisecond, "5ms", "late answer"},
		{"judge blocks until the deadline", slowJudge, 5 * time.Millisecond, "5ms", "Our opening hours are nine to five every weekday."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := (&Executor{Now: time.Now, Model: c.model, TimeLimit: c.limit}).Execute(context.Background(), newRun(t, domain.TypeLLM, hoursTest))
			want := "The run exceeded its time limit of " + c.wantLimit + "."
			if res.GetStatus() != domain.RunFailed || res.GetConditionResult() != domain.ConditionUnknown ||
				res.GetError() != want || res.GetRationaleSummary() != want {
				t.Fatalf("status %q result %q error %q summary %q", res.GetStatus(), res.GetConditionResult(), res.GetError(), res.GetRationaleSummary())
			}
			m := responses(t, res)
			switch {
			case c.wantReply == "" && len(m) != 0:
				t.Fatalf("responses %s", res.GetAgentResponsesJson())
			case c.wantReply != "" && (len(m) != 1 || m[0].Message != c.wantReply):
				t.Fatalf("responses %s", res.GetAgentResponsesJson())
			}
			if totalCalls(res) == 0 {
				t.Fatal("usage of the timed-out call is lost")
			}
		})
	}
}

func TestExecuteDefaultTimeLimit(t *testing.T) {
	m := &scripted{respond: func(ctx context.Context, _ Conversation) (Turn, Usage, error) {
		if _, ok := ctx.Deadline(); !ok {
			return Turn{}, Usage{}, errors.New("no deadline")
		}
		return Turn{}, Usage{}, context.DeadlineExceeded
	}}
	res := (&Executor{Now: time.Now, Model: m}).Execute(context.Background(), newRun(t, domain.TypeLLM, hoursTest))
	if res.GetStatus() != domain.RunFailed || res.GetError() != "The run exceeded its time limit of 2m0s." {
		t.Fatalf("status %q error %q", res.GetStatus(), res.GetError())
	}
}

func TestExecuteModelFailure(t *testing.T) {
	boom := errors.New("upstream exploded")
	cases := []struct {
		name  string
		model *scripted
		ctx   func() context.Context
		want  string
	}{
		{"respond fails", &scripted{respond: func(context.Context, Conversation) (Turn, Usage, error) {
			return Turn{}, Usage{}, boom
		}}, context.Background, "The model failed: upstream exploded"},
		{"judge fails", &scripted{judge: func(context.Context, JudgeInput) (Verdict, Usage, error) {
			return Verdict{}, Usage{}, boom
		}}, context.Background, "The model failed: upstream exploded"},
		{"caller cancels", &scripted{respond: func(ctx context.Context, _ Conversation) (Turn, Usage, error) {
			return Turn{}, Usage{}, ctx.Err()
		}}, func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}, "The model failed: context canceled"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := (&Executor{Now: time.Now, Model: c.model}).Execute(c.ctx(), newRun(t, domain.TypeLLM, hoursTest))
			if res.GetStatus() != domain.RunFailed || res.GetConditionResult() != domain.ConditionUnknown ||
				res.GetError() != c.want || res.GetRationaleSummary() != c.want {
				t.Fatalf("status %q result %q error %q summary %q", res.GetStatus(), res.GetConditionResult(), res.GetError(), res.GetRationaleSummary())
			}
			if res.GetUsage().GetProvider() != "scripted" || res.GetUsage().GetModel() != "scripted-1" {
				t.Fatalf("usage %+v", res.GetUsage())
			}
		})
	}
}

func TestExecuteJudgeUnknownFailsTheRun(t *testing.T) {
	m := &scripted{judge: func(context.Context, JudgeInput) (Verdict, Usage, error) {
		return Verdict{Result: domain.ConditionUnknown, Summary: "cannot tell"}, Usage{Calls: 1}, nil
	}}
	res := (&Executor{Now: time.Now, Model: m}).Execute(context.Background(), newRun(t, domain.TypeLLM, hoursTest))
	if res.GetStatus() != domain.RunFailed || res.GetConditionResult() != domain.ConditionUnknown || res.GetError() != "" || res.GetRationaleSummary() != "cannot tell" {
		t.Fatalf("%+v", res)
	}
}

func toolTest(params string, extra string) string {
	return `{"type":"tool","name":"Books a table",
	  "chat_history":[{"role":"user","message":"Please book a table for 4 guests, date friday","time_in_call_secs":1}],
	  "tool_call_parameters":{"referenced_tool":{"id":"book_table","type":"client"},"parameters":[` + params + `]` + extra + `}}`
}

func anyMatch(body string) string {
	return strings.Replace(body, `"type":"tool",`, `"type":"tool","check_any_tool_matches":true,`, 1)
}

const exactGuests = `{"path":"guests","eval":{"type":"exact","expected_value":"4"}}`

func TestExecuteToolTests(t *testing.T) {
	book := func(args string) Call { return Call{ID: "c1", Name: "book_table", Arguments: args} }
	cases := []struct {
		name        string
		body        string
		model       Model
		status      string
		summaryHas  string
		messagesHas string
	}{
		{"exact tool and parameters pass (offline agent)",
			toolTest(exactGuests+`,{"path":"date","eval":{"type":"regex","pattern":"^fri"}}`, ""), offline.Model{},
			domain.RunPassed, `The agent called book_table with matching parameters {"date":"friday","guests":4}.`, `Parameter guests: "4" matches exactly.`},
		{"a parameter matched by a pattern says so", toolTest(exactGuests+`,{"path":"date","eval":{"type":"regex","pattern":"^fri"}}`, ""),
			replies(book(`{"date":"friday","guests":4}`)), domain.RunPassed, "matching parameters", `Parameter date: "friday" matches /^fri/.`},
		{"exact string parameter", toolTest(`{"path":"date","eval":{"type":"exact","expected_value":"friday"}}`, ""),
			replies(book(`{"date":"friday"}`)), domain.RunPassed, "matching parameters", `Parameter date: "friday" matches exactly.`},
		{"wrong parameter value fails", toolTest(exactGuests, ""), replies(book(`{"guests":5}`)),
			domain.RunFailed, "The agent called book_table, but its parameters do not match.", `Parameter guests: got "5", expected exactly "4".`},
		{"a string where a number is expected still compares as text", toolTest(exactGuests, ""), replies(book(`{"guests":"4"}`)),
			domain.RunPassed, "matching parameters", ""},
		{"missing parameter fails", toolTest(exactGuests, ""), replies(book(`{"date":"friday"}`)),
			domain.RunFailed, "parameters do not match", `Parameter guests: got "", expected exactly "4".`},
		{"anything needs the parameter present", toolTest(`{"path":"date","eval":{"type":"anything"}}`, ""), replies(book(`{"guests":4}`)),
			domain.RunFailed, "parameters do not match", "Parameter date: missing."},
		{"anything accepts any value", toolTest(`{"path":"date","eval":{"type":"anything"}}`, ""), replies(book(`{"date":null}`)),
			domain.RunPassed, "matching parameters", ""},
		{"regex mismatch fails", toolTest(`{"path":"date","eval":{"type":"regex","pattern":"^fri"}}`, ""), replies(book(`{"date":"monday"}`)),
			domain.RunFailed, "parameters do not match", `Parameter date: "monday" does not match /^fri/.`},
		{"nested path", toolTest(`{"path":"when.day","eval":{"type":"exact","expected_value":"friday"}}`, ""),
			replies(book(`{"when":{"day":"friday"}}`)), domain.RunPassed, "matching parameters", ""},
		{"nested path through a scalar", toolTest(`{"path":"when.day","eval":{"type":"anything"}}`, ""),
			replies(book(`{"when":"friday"}`)), domain.RunFailed, "parameters do not match", "Parameter when.day: missing."},
		{"object value compared as JSON", toolTest(`{"path":"when","eval":{"type":"exact","expected_value":"{\"day\":\"fri\"}"}}`, ""),
			replies(book(`{"when":{"day":"fri"}}`)), domain.RunPassed, "matching parameters", ""},
		{"llm eval asks the judge", toolTest(`{"path":"date","eval":{"type":"llm","description":"a weekday such as friday"}}`, ""),
			replies(book(`{"date":"friday"}`)), domain.RunPassed, "matching parameters", "Parameter date: Offline judge: the reply meets every success condition"},
		{"llm eval the judge rejects", toolTest(`{"path":"date","eval":{"type":"llm","description":"a weekday such as friday"}}`, ""),
			replies(book(`{"date":"tomorrow"}`)), domain.RunFailed, "parameters do not match", "Parameter date: Offline judge: the reply does not meet the success condition"},
		{"llm eval of a missing parameter", toolTest(`{"path":"date","eval":{"type":"llm","description":"a weekday"}}`, ""),
			replies(book(`{}`)), domain.RunFailed, "parameters do not match", "Parameter date: missing."},
		{"no call fails", toolTest(exactGuests, ""),
			&scripted{respond: func(context.Context, Conversation) (Turn, Usage, error) { return agentTurn("Sure!"), Usage{}, nil }},
			domain.RunFailed, "Expected a call to book_table; the agent called no tool.", ""},
		{"a call to another tool fails", toolTest(exactGuests, ""), replies(Call{Name: "end_call", Arguments: `{}`}),
			domain.RunFailed, "Expected a call to book_table; the agent called end_call.", ""},
		{"tool names are exact", toolTest(exactGuests, ""), replies(Call{Name: "Book_Table", Arguments: `{"guests":4}`}),
			domain.RunFailed, "Expected a call to book_table; the agent called Book_Table.", ""},
		{"arguments that are not JSON fail", toolTest(exactGuests, ""), replies(book(`{guests:4`)),
			domain.RunFailed, "parameters do not match", "Call book_table: arguments are not a JSON object: {guests:4"},
		{"two calls fail without check_any_tool_matches", toolTest(exactGuests, ""),
			replies(book(`{"guests":4}`), Call{Name: "end_call", Arguments: `{}`}),
			domain.RunFailed, "Expected exactly one tool call; the agent made 2 (book_table, end_call).", ""},
		{"two calls pass with check_any_tool_matches", anyMatch(toolTest(exactGuests, "")),
			replies(Call{Name: "end_call", Arguments: `{}`}, book(`{"guests":3}`), book(`{"guests":4}`)),
			domain.RunPassed, "matching parameters {\"guests\":4}", `Call 1 of 2 (book_table): Parameter guests: got "3", expected exactly "4".
Call 2 of 2 (book_table): Parameter guests: "4" matches exactly.`},
		{"check_any_tool_matches with no matching call fails", anyMatch(toolTest(exactGuests, "")),
			replies(book(`{"guests":3}`), book(`{"guests":5}`)),
			domain.RunFailed, "parameters do not match", `got "5"`},
		{"verify_absence passes when the tool is not called", toolTest("", `,"verify_absence":true`), replies(Call{Name: "end_call", Arguments: `{}`}),
			domain.RunPassed, "The agent did not call book_table, as expected (calls: end_call).", ""},
		{"verify_absence fails when the tool is called", toolTest("", `,"verify_absence":true`), replies(book(`{}`)),
			domain.RunFailed, "Expected no call to book_table; the agent called book_table.", ""},
		{"without a referenced tool any call counts",
			`{"type":"tool","name":"t","chat_history":[{"role":"user","message":"x","time_in_call_secs":1}],"tool_call_parameters":{"parameters":[` + exactGuests + `]}}`,
			replies(Call{Name: "reserve", Arguments: `{"guests":4}`}), domain.RunPassed, "The agent called reserve with matching parameters", ""},
		{"without a referenced tool no call fails",
			`{"type":"tool","name":"t","chat_history":[{"role":"user","message":"x","time_in_call_secs":1}],"tool_call_parameters":{}}`,
			replies(), domain.RunFailed, "Expected a call to any tool; the agent called no tool.", ""},
		{"the referenced tool may be named by its id", strings.Replace(toolTest(exactGuests, ""), `"id":"book_table"`, `"id":"tool_7f3a"`, 1),
			replies(book(`{"guests":4}`)), domain.RunPassed, "The agent called book_table with matching parameters", ""},
		{"an id of no configured tool matches nothing", strings.Replace(toolTest(exactGuests, ""), `"id":"book_table"`, `"id":"tool_other"`, 1),
			replies(book(`{"guests":4}`)), domain.RunFailed, "Expected a call to tool_other; the agent called book_table.", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := (&Executor{Now: time.Now, Model: c.model}).Execute(context.Background(), newRun(t, domain.TypeTool, c.body))
			if res.GetStatus() != c.status || res.GetError() != "" {
				t.Fatalf("status %q (want %q) error %q summary %q messages %q", res.GetStatus(), c.status, res.GetError(), res.GetRationaleSummary(), res.GetRationaleMessages())
			}
			wantResult := domain.ConditionFailure
			if c.status == domain.RunPassed {
				wantResult = domain.ConditionSuccess
			}
			if res.GetConditionResult() != wantResult {
				t.Fatalf("condition %q", res.GetConditionResult())
			}
			if !strings.Contains(res.GetRationaleSummary(), c.summaryHas) {
				t.Fatalf("summary %q lacks %q", res.GetRationaleSummary(), c.summaryHas)
			}
			if c.messagesHas != "" && !strings.Contains(strings.Join(res.GetRationaleMessages(), "\n"), c.messagesHas) {
				t.Fatalf("messages %q lack %q", res.GetRationaleMessages(), c.messagesHas)
			}
		})
	}
}

func TestExecuteToolTestRecordsTheCalls(t *testing.T) {
	res := (&Executor{Now: time.Now, Model: offline.Model{}}).Execute(context.Background(), newRun(t, domain.TypeTool, toolTest(exactGuests, "")))
	m := responses(t, res)
	if len(m) != 1 || m[0].Message != "" || len(m[0].ToolCalls) != 1 {
		t.Fatalf("responses %s", res.GetAgentResponsesJson())
	}
	tc := m[0].ToolCalls[0]
	if tc.ToolName != "book_table" || tc.ParamsAsJSON != `{"date":"friday","guests":4}` || tc.RequestID != "call_book_table" || !tc.Called || tc.Type != "system" {
		t.Fatalf("tool call %+v", tc)
	}
	// A tool test never asks the judge unless a parameter is judged by llm.
	if res.GetUsage().GetModelCalls() != 0 || res.GetAgentUsage().GetModelCalls() != 1 {
		t.Fatalf("model calls: judge %d, agent %d", res.GetUsage().GetModelCalls(), res.GetAgentUsage().GetModelCalls())
	}
}

// totalCalls counts the model calls of both roles.
func totalCalls(res *testingv1.RunResult) int32 {
	return res.GetUsage().GetModelCalls() + res.GetAgentUsage().GetModelCalls()
}

func TestExecuteToolTestJudgeFailure(t *testing.T) {
	m := replies(Call{Name: "book_table", Arguments: `{"date":"friday"}`})
	m.judge = func(context.Context, JudgeInput) (Verdict, Usage, error) {
		return Verdict{}, Usage{}, errors.New("judge down")
	}
	res := (&Executor{Now: time.Now, Model: m}).Execute(context.Background(), newRun(t, domain.TypeTool,
		toolTest(`{"path":"date","eval":{"type":"llm","description":"a weekday"}}`, "")))
	if res.GetStatus() != domain.RunFailed || res.GetError() != "The model failed: judge down" {
		t.Fatalf("status %q error %q", res.GetStatus(), res.GetError())
	}
}

// A user message with characters whose lower case changes UTF-8 length
// used to make the offline agent slice out of range and crash the runner.
func TestExecuteOfflineToolTestWithUnicodeMessage(t *testing.T) {
	body := `{"type":"tool","name":"t",
	  "chat_history":[{"role":"user","message":"ȺȺȺȺȺȺȺȺȺȺȺȺ book a table for guests, date Friday","time_in_call_secs":1}],
	  "tool_call_parameters":{"referenced_tool":{"id":"book_table","type":"client"},
	    "parameters":[{"path":"date","eval":{"type":"exact","expected_value":"Friday"}}]}}`
	res := (&Executor{Now: time.Now, Model: offline.Model{}}).Execute(context.Background(), newRun(t, domain.TypeTool, body))
	if res.GetStatus() != domain.RunPassed {
		t.Fatalf("status %q: %s %q", res.GetStatus(), res.GetRationaleSummary(), res.GetRationaleMessages())
	}
}
