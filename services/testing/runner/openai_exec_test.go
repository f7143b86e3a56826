package runner

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/llm"
	"github.com/voiceai-platform/voiceai/pkg/llm/llmtest"
	"github.com/voiceai-platform/voiceai/pkg/llm/llmtest/testclient"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
	"github.com/voiceai-platform/voiceai/services/testing/modelclient"
)

// The executor over the chat-completions client (its own tests are
// modelclient's): a run's status, error and usage from what the server
// answered.

// newOpenAI starts an llmtest server answering with h and returns a model
// over it. Back-off waits are one millisecond unless cfg changes them.
func newOpenAI(t *testing.T, h llmtest.Handler, cfg func(*llm.Config)) (modelclient.OpenAI, *llmtest.Server) {
	t.Helper()
	cl, srv := testclient.New(t, h, cfg)
	return modelclient.OpenAI{Client: cl}, srv
}

// A model that gives up fails the run, which says why.
func TestExecuteOverOpenAIGivingUp(t *testing.T) {
	for _, reply := range []llmtest.Reply{llmtest.Error(503, "overloaded", "busy"), llmtest.Error(http.StatusUnauthorized, "invalid_api_key", "no")} {
		m, srv := newOpenAI(t, llmtest.Sequence(reply), func(cfg *llm.Config) { cfg.MaxRetries = 2 })
		requests := 3 // a 5xx is retried twice, a 401 not at all
		if reply.Status == http.StatusUnauthorized {
			requests = 1
		}
		res := (&Executor{Now: time.Now, Model: m}).Execute(context.Background(), newRun(t, domain.TypeLLM, hoursTest))
		if res.GetStatus() != domain.RunFailed || res.GetConditionResult() != domain.ConditionUnknown ||
			!strings.HasPrefix(res.GetError(), "The model failed: llm: API error: HTTP ") || res.GetRationaleSummary() != res.GetError() {
			t.Fatalf("status %q error %q", res.GetStatus(), res.GetError())
		}
		if res.GetUsage().GetProvider() != "openai" || res.GetUsage().GetModel() != "test-model" || res.GetAgentResponsesJson() == nil ||
			string(res.GetAgentResponsesJson()) != "[]" {
			t.Fatalf("result %+v", res)
		}
		if n := srv.Len(); n != requests {
			t.Fatalf("executor made %d requests, want %d", n, requests)
		}
	}
}

func TestExecuteOverOpenAI(t *testing.T) {
	m, srv := newOpenAI(t, llmtest.Sequence(
		llmtest.Error(429, "rate_limit_exceeded", "slow down").WithHeader("Retry-After", "0"),
		llmtest.OK("We are open nine to five every weekday.").WithUsage(100, 10),
		llmtest.OK(`{"result":"success","rationale":["gives the hours"],"summary":"The agent gives the hours."}`).WithUsage(200, 20),
	), nil)
	res := (&Executor{Now: time.Now, Model: m}).Execute(context.Background(), newRun(t, domain.TypeLLM, hoursTest))
	if res.GetStatus() != domain.RunPassed || res.GetConditionResult() != domain.ConditionSuccess || res.GetError() != "" ||
		res.GetRationaleSummary() != "The agent gives the hours." || strings.Join(res.GetRationaleMessages(), "|") != "gives the hours" {
		t.Fatalf("result %+v", res)
	}
	u, a := res.GetUsage(), res.GetAgentUsage()
	if u.GetProvider() != "openai" || u.GetModel() != "test-model" || u.GetPromptTokens() != 200 || u.GetCompletionTokens() != 20 ||
		u.GetTotalTokens() != 220 || u.GetModelCalls() != 1 {
		t.Fatalf("judge usage %+v", u)
	}
	if a.GetProvider() != "openai" || a.GetModel() != "test-model" || a.GetPromptTokens() != 100 || a.GetCompletionTokens() != 10 ||
		a.GetTotalTokens() != 110 || a.GetModelCalls() != 1 {
		t.Fatalf("agent usage %+v", a)
	}
	if m := responses(t, res); len(m) != 1 || m[0].Message != "We are open nine to five every weekday." || m[0].ProducingLLM != "test-model" {
		t.Fatalf("responses %s", res.GetAgentResponsesJson())
	}
	if srv.Len() != 3 {
		t.Fatalf("%d requests", srv.Len())
	}
	// The agent's turn went out with the substituted prompt and first message.
	first := srv.Requests()[0]
	if !strings.HasPrefix(first.Messages[0].Content, "You help guest book tables in Paris.") || first.Messages[1].Content != "Hello guest, how can I help?" {
		t.Fatalf("agent request %s", first.Body)
	}
}

func TestExecuteOverOpenAITimeLimit(t *testing.T) {
	// The server would answer in an hour; the run's limit cuts it short.
	m, srv := newOpenAI(t, llmtest.Sequence(llmtest.OK("late").WithDelay(time.Hour)), nil)
	res := (&Executor{Now: time.Now, Model: m, TimeLimit: 20 * time.Millisecond}).Execute(context.Background(), newRun(t, domain.TypeLLM, hoursTest))
	if res.GetStatus() != domain.RunFailed || res.GetError() != "The run exceeded its time limit of 20ms." {
		t.Fatalf("status %q error %q", res.GetStatus(), res.GetError())
	}
	// Not retried once the limit struck. (On a busy machine the limit may
	// strike before the one request reaches the server: none is fine.)
	if srv.Len() > 1 {
		t.Fatalf("%d requests, want at most 1", srv.Len())
	}
}

func TestExecuteOverOpenAIToolTest(t *testing.T) {
	m, _ := newOpenAI(t, llmtest.Sequence(llmtest.ToolCall("book_table", `{"guests":4,"date":"friday"}`)), nil)
	res := (&Executor{Now: time.Now, Model: m}).Execute(context.Background(), newRun(t, domain.TypeTool,
		toolTest(exactGuests+`,{"path":"date","eval":{"type":"regex","pattern":"^fri"}}`, "")))
	if res.GetStatus() != domain.RunPassed || res.GetAgentUsage().GetModelCalls() != 1 || res.GetUsage().GetModelCalls() != 0 {
		t.Fatalf("status %q %s %q", res.GetStatus(), res.GetRationaleSummary(), res.GetRationaleMessages())
	}
	wrong, _ := newOpenAI(t, llmtest.Sequence(llmtest.ToolCall("book_table", `{"guests":2,"date":"friday"}`)), nil)
	res = (&Executor{Now: time.Now, Model: wrong}).Execute(context.Background(), newRun(t, domain.TypeTool, toolTest(exactGuests, "")))
	if res.GetStatus() != domain.RunFailed || !strings.Contains(strings.Join(res.GetRationaleMessages(), "\n"), `got "2", expected exactly "4"`) {
		t.Fatalf("status %q %s %q", res.GetStatus(), res.GetRationaleSummary(), res.GetRationaleMessages())
	}
}

// A chat history with tool calls goes out as a chat-completions API
// accepts it: every assistant tool call is followed at once by the tool
// message that answers it (OpenAI refuses the request otherwise).
func TestExecuteOverOpenAIAnswersTheHistorysToolCalls(t *testing.T) {
	m, srv := newOpenAI(t, func(req llmtest.Request) llmtest.Reply {
		if err := toolCallsAnswered(req.Messages); err != nil {
			return llmtest.Error(400, "invalid_request_error", err.Error())
		}
		if req.ResponseFormat != nil {
			return llmtest.OK(`{"result":"success","rationale":["confirms"],"summary":"The agent confirms the booking."}`)
		}
		return llmtest.OK("Your table for two is booked.")
	}, nil)
	res := (&Executor{Now: time.Now, Model: m}).Execute(context.Background(), newRun(t, domain.TypeLLM, `{"type":"llm","name":"x","success_condition":"confirms the booking",
	  "chat_history":[{"role":"user","message":"Book for two","time_in_call_secs":1},
	    {"role":"agent","time_in_call_secs":2,"tool_calls":[{"request_id":"r1","tool_name":"book_table","params_as_json":"{\"guests\":2}"}]},
	    {"role":"agent","time_in_call_secs":3,"tool_results":[{"request_id":"r1","tool_name":"book_table","result_value":"booked","is_error":false}]},
	    {"role":"user","message":"Is it booked?","time_in_call_secs":4}]}`))
	if res.GetStatus() != domain.RunPassed || res.GetError() != "" {
		t.Fatalf("status %q error %q (%s)", res.GetStatus(), res.GetError(), res.GetRationaleSummary())
	}
	agent := srv.Requests()[0].Messages
	if len(agent) != 6 || agent[4].Role != "tool" || agent[4].ToolCallID != "r1" || agent[4].Content != "booked" {
		t.Fatalf("agent request %s", srv.Requests()[0].Body)
	}
}

// toolCallsAnswered applies the chat-completions rule on tool calls.
func toolCallsAnswered(msgs []llmtest.Message) error {
	for i, m := range msgs {
		for j, c := range m.ToolCalls {
			k := i + 1 + j
			if k >= len(msgs) || msgs[k].Role != "tool" || msgs[k].ToolCallID != c.ID {
				return errors.New("an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'")
			}
		}
	}
	return nil
}
