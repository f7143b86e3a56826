// Package modelclient holds the model clients of agent testing, behind
// package model's interfaces: the chat-completions client (OpenAI: the
// judge, the simulated user and the platform's agents), an agent's own
// endpoint (Endpoints: its limits, circuit breaker and the redaction of
// the credentials sent to it) and the platform's agents (PlatformAgents).
// A run talks to them only through model's context hooks.
package modelclient

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/llm"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
	"github.com/voiceai-platform/voiceai/services/testing/model"
)

// OpenAI plays the agent and judges through any OpenAI-compatible
// chat-completions endpoint (OpenAI, vLLM, Ollama, llama.cpp server). The
// client retries 429 and 5xx with back-off, honouring Retry-After.
type OpenAI struct {
	Client *llm.Client
	// Observe, when set, is told how long each request to the server took
	// (retries included) and whether it failed.
	Observe func(took time.Duration, err error)
	// Temperature and MaxTokens, when set, are the agent's settings for its
	// turns (else temperature 0, the server's max tokens); the judge and the
	// simulated user always use temperature 0.
	Temperature *float64
	MaxTokens   int
	// ProviderName names the provider in results ("openai" when empty).
	ProviderName string
	cache        *cacheScope // nil: every request goes to the server
}

// send sends req to the server, timing it.
func (o OpenAI) send(ctx context.Context, req llm.ChatRequest) (llm.ChatResponse, error) {
	start := time.Now()
	// A run cancelled meanwhile calls the server no more for retries.
	cctx := llm.WithRetryCheck(ctx, func() bool { return model.StillWanted(ctx) })
	if clock, ok := model.WireClockOf(ctx); ok {
		// A retry's wait is the server's doing (it failed, or asked for the
		// wait): not the platform's overhead.
		cctx = llm.WithRetryWait(cctx, clock.Add)
	}
	res, err := o.Client.Chat(cctx, req)
	if o.Observe != nil {
		o.Observe(time.Since(start), err)
	}
	if err == nil && res.FirstToken > 0 {
		model.MarkFirstToken(ctx, start.Add(res.FirstToken)) // an agent turn's: see model.TurnClock
	}
	return res, err
}

// WithCache answers one run (repeat index) through c: a request identical
// to one made before in the same place of a run is answered from c.
func (o OpenAI) WithCache(c model.ResponseCache, repeatIndex int) model.Model {
	o.cache = newCacheScope(c, o.Provider(), repeatIndex)
	return o
}

// chat sends req, or answers it from the cache. Only a successful answer
// is cached: a failure is worth trying again.
func (o OpenAI) chat(ctx context.Context, req llm.ChatRequest) (llm.ChatResponse, model.Usage, error) {
	if o.cache == nil {
		res, err := o.send(ctx, req)
		if err != nil {
			return res, model.Usage{}, err
		}
		return res, usageOf(res.Usage), nil
	}
	identity, err := o.Client.Identity(req)
	if err != nil {
		return llm.ChatResponse{}, model.Usage{}, err
	}
	key := o.cache.key(identity)
	if b, ok := o.cache.store.Get(ctx, key); ok {
		var res llm.ChatResponse
		if json.Unmarshal(b, &res) == nil {
			return res, model.Usage{Cached: 1}, nil
		}
	}
	res, err := o.send(ctx, req)
	if err != nil {
		return res, model.Usage{}, err
	}
	if b, err := json.Marshal(res); err == nil {
		o.cache.store.Put(ctx, key, b)
	}
	return res, usageOf(res.Usage), nil
}

// Provider is "openai", or ProviderName.
func (o OpenAI) Provider() string {
	if o.ProviderName != "" {
		return o.ProviderName
	}
	return "openai"
}

// ModelName is the configured model.
func (o OpenAI) ModelName() string { return o.Client.Model() }

func usageOf(u llm.Usage) model.Usage {
	return model.Usage{PromptTokens: int64(u.PromptTokens), CompletionTokens: int64(u.CompletionTokens), TotalTokens: int64(u.TotalTokens), Calls: 1}
}

// Respond sends the system prompt, the conversation and the tools.
func (o OpenAI) Respond(ctx context.Context, c model.Conversation) (model.Turn, model.Usage, error) {
	req := llm.ChatRequest{Messages: []llm.Message{{Role: llm.RoleSystem, Content: c.SystemPrompt}}, MaxTokens: o.MaxTokens}
	zero := 0.0
	req.Temperature = &zero
	if o.Temperature != nil {
		req.Temperature = o.Temperature
	}
	for _, t := range c.Tools {
		req.Tools = append(req.Tools, llm.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	for _, t := range c.Turns {
		m := llm.Message{Content: t.Text}
		switch t.Role {
		case "agent":
			m.Role = llm.RoleAssistant
			for _, call := range t.Calls {
				m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: call.ID, Name: call.Name, Arguments: call.Arguments})
			}
		case "tool":
			m.Role, m.ToolCallID = llm.RoleTool, t.ToolCallID
			if t.IsError && !strings.HasPrefix(t.Text, "Error") {
				m.Content = "Error: " + t.Text
			}
		default:
			m.Role = llm.RoleUser
		}
		req.Messages = append(req.Messages, m)
	}
	res, u, err := o.chat(ctx, req)
	if err != nil {
		return model.Turn{}, model.Usage{}, err
	}
	out := model.Turn{Role: "agent", Text: res.Message.Content}
	for _, tc := range res.Message.ToolCalls {
		out.Calls = append(out.Calls, model.Call{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
	}
	return out, u, nil
}

// UserDone is what the simulated user model writes to end the
// conversation.
const UserDone = "[END_CONVERSATION]"

const userPrompt = `You play the user (the caller) in a test of a voice agent. Stay in character as the persona below and pursue its goals, one request at a time, as a real caller would: answer the agent's questions from what the persona knows, and do not invent goals the persona does not have. Write only your next message to the agent: plain spoken text, short, no stage directions.
When your goals are met, or the agent cannot help and there is nothing left to ask, write a short closing message followed by ` + UserDone + ` (or ` + UserDone + ` alone).

Persona and scenario:
`

// SimulateUser asks the model for the user's next message; the model
// plays the persona, sees the agent's turns as the other party's, and
// ends the conversation with UserDone.
func (o OpenAI) SimulateUser(ctx context.Context, in model.UserInput) (model.UserTurn, model.Usage, error) {
	scenario := in.Scenario
	if strings.TrimSpace(scenario) == "" {
		scenario = "(none given: a caller with a short, ordinary question for this agent)"
	}
	zero := 0.0
	req := llm.ChatRequest{Temperature: &zero, Messages: []llm.Message{{Role: llm.RoleSystem, Content: userPrompt + scenario}}}
	for _, t := range in.Transcript {
		switch {
		case t.Role == "user":
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Content: t.Text})
		case t.Role == "agent" && t.Text != "":
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: t.Text})
		}
	}
	if len(req.Messages) == 1 || req.Messages[len(req.Messages)-1].Role != llm.RoleUser {
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: "(The agent is waiting for you to speak.)"})
	}
	res, u, err := o.chat(ctx, req)
	if err != nil {
		return model.UserTurn{}, model.Usage{}, err
	}
	text := strings.TrimSpace(res.Message.Content)
	done := strings.Contains(text, UserDone)
	if done {
		text = strings.TrimSpace(strings.ReplaceAll(text, UserDone, ""))
	}
	return model.UserTurn{Text: text, Done: done}, u, nil
}

const judgePrompt = `You evaluate a voice agent's reply in a test. Decide whether the reply satisfies every success condition, and compare it with the example replies: replies like the success examples pass, replies like the failure examples fail.
Answer with a JSON object only: {"result": "success" or "failure", "rationale": ["short reason", ...], "summary": "one sentence"}.`

// Judge asks the model for a JSON verdict; a reply that is not one is
// "unknown" and says so.
func (o OpenAI) Judge(ctx context.Context, in model.JudgeInput) (model.Verdict, model.Usage, error) {
	var b strings.Builder
	if in.Simulation {
		b.WriteString("This is a whole simulated conversation, and all of it is under test: a success condition is met if the agent met it at any point of the conversation.\n\n")
		b.WriteString(transcriptText(in.Transcript))
		fmt.Fprintf(&b, "\nThe agent's last turn: %s\n", in.Reply.Said())
	} else {
		b.WriteString(transcriptText(in.Transcript))
		fmt.Fprintf(&b, "\nReply under test: %s\n", in.Reply.Said())
	}
	for i, c := range in.Conditions {
		fmt.Fprintf(&b, "Success condition %d: %s\n", i+1, c)
	}
	for i, e := range in.SuccessExamples {
		fmt.Fprintf(&b, "Success example %d: %s\n", i+1, e)
	}
	for i, e := range in.FailureExamples {
		fmt.Fprintf(&b, "Failure example %d: %s\n", i+1, e)
	}
	zero := 0.0
	res, u, err := o.chat(ctx, llm.ChatRequest{JSONObject: true, Temperature: &zero, Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: judgePrompt}, {Role: llm.RoleUser, Content: b.String()},
	}})
	if err != nil {
		return model.Verdict{}, model.Usage{}, err
	}
	var out struct {
		Result    string   `json:"result"`
		Rationale []string `json:"rationale"`
		Summary   string   `json:"summary"`
	}
	v := model.Verdict{Result: domain.ConditionUnknown}
	switch {
	case json.Unmarshal([]byte(res.Message.Content), &out) != nil ||
		(out.Result != domain.ConditionSuccess && out.Result != domain.ConditionFailure && out.Result != domain.ConditionUnknown):
		v.Summary = "The judge model did not answer with a verdict: " + truncate(res.Message.Content, 200)
	case out.Result == domain.ConditionUnknown:
		// A verdict all the same: the model says it cannot decide, and why.
		v.Messages, v.Summary = out.Rationale, unknownSummary(out.Summary, out.Rationale)
	default:
		v.Result, v.Messages, v.Summary = out.Result, out.Rationale, out.Summary
	}
	return v, u, nil
}

// unknownSummary is the summary of a judge model's well-formed
// "unknown": that it answered so, in its own words (its summary, else its
// rationale).
func unknownSummary(summary string, rationale []string) string {
	why := strings.TrimSpace(summary)
	if why == "" {
		why = strings.TrimSpace(strings.Join(rationale, " "))
	}
	if why == "" {
		return "The judge model answered unknown, giving no reason."
	}
	return "The judge model answered unknown: " + why
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "..."
	}
	return s
}

// transcriptText is a conversation as plain lines, for a prompt.
func transcriptText(turns []model.Turn) string {
	var b strings.Builder
	for _, t := range turns {
		switch t.Role {
		case "tool":
			status := "result"
			if t.IsError {
				status = "error"
			}
			fmt.Fprintf(&b, "tool %s %s: %s\n", t.ToolName, status, t.Text)
		default:
			fmt.Fprintf(&b, "%s: %s\n", t.Role, t.Said())
		}
	}
	return b.String()
}
