package modelclient

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/llm"
	"github.com/voiceai-platform/voiceai/pkg/llm/llmtest"
	"github.com/voiceai-platform/voiceai/pkg/llm/llmtest/testclient"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
	"github.com/voiceai-platform/voiceai/services/testing/model"
)

// newOpenAI starts an llmtest server answering with h and returns a model
// over it. Back-off waits are one millisecond unless cfg changes them.
func newOpenAI(t *testing.T, h llmtest.Handler, cfg func(*llm.Config)) (OpenAI, *llmtest.Server) {
	t.Helper()
	cl, srv := testclient.New(t, h, cfg)
	return OpenAI{Client: cl}, srv
}

var conversation = model.Conversation{
	SystemPrompt: "You help Ann book tables.",
	Tools:        []model.Tool{bookTable},
	Turns: []model.Turn{
		agentTurn("Hello Ann!"),
		userTurn("Book a table for 4"),
		{Role: "agent", Calls: []model.Call{{ID: "call_1", Name: "book_table", Arguments: `{"guests":4}`}}},
		{Role: "tool", Text: `{"ok":true}`, ToolCallID: "call_1"},
		userTurn("Thanks, what time?"),
	},
}

func TestOpenAIIdentity(t *testing.T) {
	m, _ := newOpenAI(t, nil, nil)
	if m.Provider() != "openai" || m.ModelName() != "test-model" {
		t.Fatalf("%s %s", m.Provider(), m.ModelName())
	}
}

func TestOpenAIRespondCompletion(t *testing.T) {
	m, srv := newOpenAI(t, llmtest.Sequence(llmtest.OK("We open at nine.").WithUsage(120, 7)), nil)
	turn, u, err := m.Respond(context.Background(), conversation)
	if err != nil {
		t.Fatal(err)
	}
	if turn.Role != "agent" || turn.Text != "We open at nine." || len(turn.Calls) != 0 {
		t.Fatalf("turn %+v", turn)
	}
	if u != (model.Usage{PromptTokens: 120, CompletionTokens: 7, TotalTokens: 127, Calls: 1}) {
		t.Fatalf("usage %+v", u)
	}

	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Model != "test-model" || r.Temperature == nil || *r.Temperature != 0 || r.ResponseFormat != nil || r.BearerToken() != "sk-test" {
		t.Fatalf("request %s", r.Body)
	}
	type msg struct{ role, content, callID, calls string }
	want := []msg{
		{"system", "You help Ann book tables.", "", ""},
		{"assistant", "Hello Ann!", "", ""},
		{"user", "Book a table for 4", "", ""},
		{"assistant", "", "", `call_1 book_table {"guests":4}`},
		{"tool", `{"ok":true}`, "call_1", ""},
		{"user", "Thanks, what time?", "", ""},
	}
	if len(r.Messages) != len(want) {
		t.Fatalf("messages %s", r.Body)
	}
	for i, w := range want {
		got := r.Messages[i]
		calls := ""
		for _, c := range got.ToolCalls {
			calls = c.ID + " " + c.Function.Name + " " + c.Function.Arguments
		}
		if got.Role != w.role || got.Content != w.content || got.ToolCallID != w.callID || calls != w.calls {
			t.Fatalf("message %d: %+v, want %+v", i, got, w)
		}
	}
	if len(r.Tools) != 1 || r.Tools[0].Type != "function" || r.Tools[0].Function.Name != "book_table" ||
		r.Tools[0].Function.Description != bookTable.Description || !jsonEqual(r.Tools[0].Function.Parameters, bookTable.Parameters) {
		t.Fatalf("tools %s", r.Body)
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

func TestOpenAIRespondToolCall(t *testing.T) {
	m, _ := newOpenAI(t, llmtest.Sequence(llmtest.ToolCall("book_table", `{"guests":4,"date":"friday"}`)), nil)
	turn, u, err := m.Respond(context.Background(), model.Conversation{SystemPrompt: "p", Tools: []model.Tool{bookTable}, Turns: []model.Turn{userTurn("book")}})
	if err != nil {
		t.Fatal(err)
	}
	if turn.Text != "" || len(turn.Calls) != 1 || turn.Calls[0].Name != "book_table" || turn.Calls[0].Arguments != `{"guests":4,"date":"friday"}` ||
		turn.Calls[0].ID == "" {
		t.Fatalf("turn %+v", turn)
	}
	// The server counts usage itself when the reply gives none.
	if u.Calls != 1 || u.PromptTokens == 0 || u.CompletionTokens == 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Fatalf("usage %+v", u)
	}
}

func TestOpenAIRetries(t *testing.T) {
	ok := llmtest.OK("fine").WithUsage(11, 2)
	cases := []struct {
		name     string
		replies  []llmtest.Reply
		cfg      func(*llm.Config)
		requests int
	}{
		// Back-off without a hint would wait up to an hour: only honouring
		// Retry-After: 0 lets the retry come at once.
		{"429 with Retry-After then success",
			[]llmtest.Reply{llmtest.Error(429, "rate_limit_exceeded", "slow down").WithHeader("Retry-After", "0"), ok},
			func(c *llm.Config) { c.InitialBackoff, c.MaxBackoff = time.Hour, time.Hour }, 2},
		{"429 with retry-after-ms then success",
			[]llmtest.Reply{llmtest.Error(429, "rate_limit_exceeded", "slow down").WithHeader("retry-after-ms", "0"), ok},
			func(c *llm.Config) { c.InitialBackoff, c.MaxBackoff = time.Hour, time.Hour }, 2},
		{"a long Retry-After is capped by MaxBackoff",
			[]llmtest.Reply{llmtest.Error(429, "rate_limit_exceeded", "slow down").WithHeader("Retry-After", "3600"), ok},
			nil, 2},
		{"5xx answers are retried",
			[]llmtest.Reply{llmtest.Error(500, "server_error", "oops"), llmtest.Error(502, "bad_gateway", "proxy"),
				llmtest.Error(503, "overloaded", "busy"), ok},
			nil, 4},
		{"a malformed 200 is retried",
			[]llmtest.Reply{{Status: 200, Raw: []byte(`{"choices":[`)}, ok},
			nil, 2},
		{"a dropped connection is retried",
			[]llmtest.Reply{{Drop: true}, ok},
			nil, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, srv := newOpenAI(t, llmtest.Sequence(c.replies...), c.cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a guard, never reached when the test passes
			defer cancel()
			turn, u, err := m.Respond(ctx, model.Conversation{SystemPrompt: "p", Turns: []model.Turn{userTurn("hi")}})
			if err != nil {
				t.Fatalf("Respond: %v", err)
			}
			if turn.Text != "fine" {
				t.Fatalf("turn %+v", turn)
			}
			// Usage is that of the successful answer only.
			if u != (model.Usage{PromptTokens: 11, CompletionTokens: 2, TotalTokens: 13, Calls: 1}) {
				t.Fatalf("usage %+v", u)
			}
			reqs := srv.Requests()
			if len(reqs) != c.requests {
				t.Fatalf("%d requests, want %d", len(reqs), c.requests)
			}
			for i, r := range reqs {
				if r.Attempt != i+1 || string(r.Body) != string(reqs[0].Body) {
					t.Fatalf("request %d is attempt %d of another body", i, r.Attempt)
				}
			}
		})
	}
}

func TestOpenAIGivesUp(t *testing.T) {
	cases := []struct {
		name     string
		reply    llmtest.Reply
		requests int
		status   int
	}{
		{"5xx until retries run out", llmtest.Error(503, "overloaded", "busy"), 3, 503},
		{"429 until retries run out", llmtest.Error(429, "rate_limit_exceeded", "slow down").WithHeader("retry-after-ms", "0"), 3, 429},
		{"4xx is not retried", llmtest.Error(400, "invalid_request_error", "bad"), 1, 400},
		{"401 is not retried", llmtest.Error(http.StatusUnauthorized, "invalid_api_key", "no"), 1, 401},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, srv := newOpenAI(t, llmtest.Sequence(c.reply), func(cfg *llm.Config) { cfg.MaxRetries = 2 })
			_, u, err := m.Respond(context.Background(), model.Conversation{SystemPrompt: "p", Turns: []model.Turn{userTurn("hi")}})
			var ae *llm.APIError
			if !errors.As(err, &ae) || ae.StatusCode != c.status || ae.Attempts != c.requests {
				t.Fatalf("error %v (%T)", err, err)
			}
			if u != (model.Usage{}) {
				t.Fatalf("usage of a failed call %+v", u)
			}
			if n := srv.Len(); n != c.requests {
				t.Fatalf("%d requests, want %d", n, c.requests)
			}
		})
	}
}

func TestOpenAIJudge(t *testing.T) {
	in := model.JudgeInput{
		Conditions:      []string{"states the hours"},
		SuccessExamples: []string{"Open nine to five."},
		FailureExamples: []string{"I do not know."},
		Transcript:      []model.Turn{agentTurn("Hello!"), userTurn("Hours?")},
		Reply:           model.Turn{Role: "agent", Text: "Nine to five.", Calls: []model.Call{{Name: "lookup", Arguments: `{"d":1}`}}},
	}
	long := strings.Repeat("é", 250)
	cases := []struct {
		name    string
		content string
		want    model.Verdict
	}{
		{"success verdict", `{"result":"success","rationale":["states nine to five"],"summary":"The hours are given."}`,
			model.Verdict{Result: domain.ConditionSuccess, Messages: []string{"states nine to five"}, Summary: "The hours are given."}},
		{"failure verdict", `{"result":"failure","rationale":[],"summary":"No hours."}`,
			model.Verdict{Result: domain.ConditionFailure, Messages: []string{}, Summary: "No hours."}},
		{"not JSON is unknown", `I think it passes`,
			model.Verdict{Result: domain.ConditionUnknown, Summary: "The judge model did not answer with a verdict: I think it passes"}},
		{"a well-formed unknown is the model's answer, with its reasons", `{"result":"unknown","rationale":["the hours are cut off"],"summary":"Cannot tell."}`,
			model.Verdict{Result: domain.ConditionUnknown, Messages: []string{"the hours are cut off"}, Summary: "The judge model answered unknown: Cannot tell."}},
		{"an unknown without a summary gives its rationale", `{"result":"unknown","rationale":["the hours are cut off"]}`,
			model.Verdict{Result: domain.ConditionUnknown, Messages: []string{"the hours are cut off"}, Summary: "The judge model answered unknown: the hours are cut off"}},
		{"an unknown without reasons says so", `{"result":"unknown"}`,
			model.Verdict{Result: domain.ConditionUnknown, Summary: "The judge model answered unknown, giving no reason."}},
		{"another result is unknown", `{"result":"maybe","summary":"hmm"}`,
			model.Verdict{Result: domain.ConditionUnknown, Summary: `The judge model did not answer with a verdict: {"result":"maybe","summary":"hmm"}`}},
		{"a long answer is cut at 200 runes", long,
			model.Verdict{Result: domain.ConditionUnknown, Summary: "The judge model did not answer with a verdict: " + strings.Repeat("é", 200) + "..."}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, srv := newOpenAI(t, llmtest.Sequence(llmtest.OK(c.content).WithUsage(50, 9)), nil)
			v, u, err := m.Judge(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if v.Result != c.want.Result || v.Summary != c.want.Summary || len(v.Messages) != len(c.want.Messages) ||
				strings.Join(v.Messages, "|") != strings.Join(c.want.Messages, "|") {
				t.Fatalf("verdict %+v, want %+v", v, c.want)
			}
			if u != (model.Usage{PromptTokens: 50, CompletionTokens: 9, TotalTokens: 59, Calls: 1}) {
				t.Fatalf("usage %+v", u)
			}
			r := srv.Requests()[0]
			if r.ResponseFormat == nil || r.ResponseFormat.Type != "json_object" || r.Temperature == nil || *r.Temperature != 0 ||
				len(r.Messages) != 2 || r.Messages[0].Role != "system" || r.Messages[0].Content != judgePrompt || r.Messages[1].Role != "user" {
				t.Fatalf("judge request %s", r.Body)
			}
			prompt := r.Messages[1].Content
			for _, s := range []string{"agent: Hello!\n", "user: Hours?\n", "Reply under test: Nine to five. lookup {\"d\":1}\n",
				"Success condition 1: states the hours\n", "Success example 1: Open nine to five.\n", "Failure example 1: I do not know.\n"} {
				if !strings.Contains(prompt, s) {
					t.Fatalf("judge prompt lacks %q:\n%s", s, prompt)
				}
			}
		})
	}
}

func TestOpenAIJudgeError(t *testing.T) {
	m, _ := newOpenAI(t, llmtest.Sequence(llmtest.Error(400, "invalid_request_error", "bad")), nil)
	if _, _, err := m.Judge(context.Background(), model.JudgeInput{Reply: agentTurn("x")}); err == nil {
		t.Fatal("no error")
	}
}

func TestOpenAISimulateUser(t *testing.T) {
	in := model.UserInput{Scenario: "You are Ann. You want to book a table.", Transcript: []model.Turn{
		agentTurn("Hello Ann!"), userTurn("Book a table for 4"),
		{Role: "agent", Calls: []model.Call{{ID: "call_1", Name: "book_table", Arguments: `{"guests":4}`}}},
		{Role: "tool", Text: `{"ok":true}`, ToolCallID: "call_1", ToolName: "book_table"},
		agentTurn("Booked. Anything else?"),
	}}
	cases := []struct {
		name, content string
		want          model.UserTurn
	}{
		{"a message", " What time is it for? ", model.UserTurn{Text: "What time is it for?"}},
		{"closing words and the stop token", "Thanks, bye! " + UserDone, model.UserTurn{Text: "Thanks, bye!", Done: true}},
		{"the stop token alone", UserDone, model.UserTurn{Done: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, srv := newOpenAI(t, llmtest.Sequence(llmtest.OK(c.content).WithUsage(30, 4)), nil)
			got, u, err := m.SimulateUser(context.Background(), in)
			if err != nil || got != c.want || u != (model.Usage{PromptTokens: 30, CompletionTokens: 4, TotalTokens: 34, Calls: 1}) {
				t.Fatalf("%+v %+v %v, want %+v", got, u, err, c.want)
			}
			r := srv.Requests()[0]
			// The roles are swapped: the model plays the user; tool turns and
			// the agent's silent tool calls are not shown to it.
			type msg struct{ role, content string }
			want := []msg{{"system", userPrompt + in.Scenario}, {"user", "Hello Ann!"}, {"assistant", "Book a table for 4"}, {"user", "Booked. Anything else?"}}
			if len(r.Messages) != len(want) || len(r.Tools) != 0 || r.Temperature == nil || *r.Temperature != 0 {
				t.Fatalf("request %s", r.Body)
			}
			for i, w := range want {
				if r.Messages[i].Role != w.role || r.Messages[i].Content != w.content {
					t.Fatalf("message %d: %+v, want %+v", i, r.Messages[i], w)
				}
			}
		})
	}
	t.Run("the user speaks first", func(t *testing.T) {
		m, srv := newOpenAI(t, llmtest.Sequence(llmtest.OK("Hi, I'd like a table.")), nil)
		if _, _, err := m.SimulateUser(context.Background(), model.UserInput{}); err != nil {
			t.Fatal(err)
		}
		r := srv.Requests()[0]
		if len(r.Messages) != 2 || !strings.Contains(r.Messages[0].Content, "(none given") || r.Messages[1].Role != "user" {
			t.Fatalf("request %s", r.Body)
		}
	})
}

func TestOpenAIToolErrorsAndSimulationJudge(t *testing.T) {
	m, srv := newOpenAI(t, llmtest.Sequence(llmtest.OK("Sorry."), llmtest.OK(`{"result":"success","rationale":[],"summary":"ok"}`)), nil)
	conv := model.Conversation{Turns: []model.Turn{userTurn("Book"), {Role: "agent", Calls: []model.Call{{ID: "c", Name: "book_table", Arguments: "{}"}}},
		{Role: "tool", Text: "no mock matched", ToolCallID: "c", ToolName: "book_table", IsError: true}}}
	if _, _, err := m.Respond(context.Background(), conv); err != nil {
		t.Fatal(err)
	}
	if got := srv.Requests()[0].Messages[3]; got.Role != "tool" || got.Content != "Error: no mock matched" {
		t.Fatalf("tool message %+v", got)
	}
	in := model.JudgeInput{Simulation: true, Conditions: []string{"books"}, Reply: agentTurn("Sorry."),
		Transcript: append(conv.Turns, agentTurn("Sorry."), userTurn("Bye."))}
	if _, _, err := m.Judge(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	prompt := srv.Requests()[1].Messages[1].Content
	for _, s := range []string{"all of it is under test", "user: Book\n", "tool book_table error: no mock matched\n", "user: Bye.\n", "The agent's last turn: Sorry.\n"} {
		if !strings.Contains(prompt, s) {
			t.Fatalf("judge prompt lacks %q:\n%s", s, prompt)
		}
	}
}

var bookTable = model.Tool{ID: "tool_book", Name: "book_table", Description: "Book a table reservation for guests",
	Parameters: json.RawMessage(`{"type":"object","properties":{"guests":{"type":"number"},"date":{"type":"string"}}}`)}

func userTurn(s string) model.Turn  { return model.Turn{Role: "user", Text: s} }
func agentTurn(s string) model.Turn { return model.Turn{Role: "agent", Text: s} }
