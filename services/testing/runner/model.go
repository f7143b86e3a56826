// Package runner executes test runs: it plays the agent's next turn from
// its configuration and the test's chat history through a model, then
// judges the reply; a simulation test plays a whole conversation with a
// simulated user (simulate.go). Workers pull run jobs from the TESTJOBS
// work queue.
package runner

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/voiceai-platform/voiceai/pkg/agentconfig"
)

// Tool is a tool the agent may call.
type Tool struct {
	ID          string
	Name        string
	Description string
	Parameters  json.RawMessage // JSON schema of the arguments
}

// Call is a tool call made by the agent.
type Call struct {
	ID        string
	Name      string
	Arguments string // JSON object
}

// Turn is one message of a conversation. A "tool" turn is the result
// (Text) of the agent's call ToolCallID to ToolName.
type Turn struct {
	Role       string // "system", "user", "agent" or "tool"
	Text       string
	Calls      []Call
	ToolCallID string
	ToolName   string // a tool turn: the tool called
	IsError    bool   // a tool turn: the call failed and Text says why
}

// Conversation is what the agent model answers.
type Conversation struct {
	SystemPrompt string
	Turns        []Turn
	Tools        []Tool
	LLM          string // the agent's configured model, informational
}

// JudgeInput is what the judge decides on.
type JudgeInput struct {
	Conditions      []string
	SuccessExamples []string
	FailureExamples []string
	Transcript      []Turn // the conversation before the reply; for a simulation all of it, the reply included
	Reply           Turn   // the agent's reply; for a simulation its last turn
	// Simulation: the whole conversation is under test, and a condition
	// is met when the agent met it at any point of it.
	Simulation bool
}

// UserInput is what the simulated user of a simulation test answers.
type UserInput struct {
	Scenario   string // simulation_scenario: the user's persona and what they want
	Transcript []Turn // the conversation so far, tool turns included
}

// UserTurn is the simulated user's next message, or the end of the
// conversation (Done; Text, if any, is the user's closing words).
type UserTurn struct {
	Text string
	Done bool
}

// Verdict is the judge's decision.
type Verdict struct {
	Result   string // success | failure | unknown
	Messages []string
	Summary  string
}

// Usage is what a model call cost. An answer from the response cache
// costs no call and no tokens: it counts in Cached.
type Usage struct {
	PromptTokens, CompletionTokens, TotalTokens int64
	Calls, Cached                               int32
}

// Add sums usages.
func (u *Usage) Add(o Usage) {
	u.PromptTokens += o.PromptTokens
	u.CompletionTokens += o.CompletionTokens
	u.TotalTokens += o.TotalTokens
	u.Calls += o.Calls
	u.Cached += o.Cached
}

// Sub takes o from u.
func (u *Usage) Sub(o Usage) {
	u.PromptTokens -= o.PromptTokens
	u.CompletionTokens -= o.CompletionTokens
	u.TotalTokens -= o.TotalTokens
	u.Calls -= o.Calls
	u.Cached -= o.Cached
}

// Model plays the agent, the simulated user of a simulation test, and
// judges the agent's replies.
type Model interface {
	Provider() string
	ModelName() string
	Respond(ctx context.Context, c Conversation) (Turn, Usage, error)
	SimulateUser(ctx context.Context, in UserInput) (UserTurn, Usage, error)
	Judge(ctx context.Context, in JudgeInput) (Verdict, Usage, error)
}

// Deterministic is implemented by a model that always gives the same
// answer to the same question (Offline): asking its judge again is
// pointless, so its first verdict stands.
type Deterministic interface{ Deterministic() bool }

// Cacheable is implemented by a model whose answers can be kept in a
// ResponseCache: WithCache is the model answering one run (its repeat
// index) through the cache.
type Cacheable interface {
	WithCache(c ResponseCache, repeatIndex int) Model
}

// AgentConfig is what a run needs of the agent's configuration.
type AgentConfig struct {
	SystemPrompt     string
	FirstMessage     string
	LLM              string
	Tools            []Tool
	DynamicVariables map[string]string
	// Model is the prompt's model settings: temperature, max tokens and,
	// for "custom-llm", the agent's own endpoint.
	Model agentconfig.Prompt
}

// ParseAgentConfig reads conversation_config JSON (public shape: agent.
// prompt.prompt, agent.first_message, agent.prompt.tools, agent.
// dynamic_variables.dynamic_variable_placeholders, agent.prompt.llm).
func ParseAgentConfig(conversationConfig []byte) AgentConfig {
	var cc struct {
		Agent struct {
			FirstMessage     string `json:"first_message"`
			DynamicVariables struct {
				Placeholders map[string]any `json:"dynamic_variable_placeholders"`
			} `json:"dynamic_variables"`
			Prompt struct {
				Prompt string            `json:"prompt"`
				LLM    string            `json:"llm"`
				Tools  []json.RawMessage `json:"tools"`
			} `json:"prompt"`
		} `json:"agent"`
	}
	_ = json.Unmarshal(conversationConfig, &cc)
	out := AgentConfig{
		SystemPrompt: cc.Agent.Prompt.Prompt, FirstMessage: cc.Agent.FirstMessage, LLM: cc.Agent.Prompt.LLM,
		DynamicVariables: map[string]string{}, Model: agentconfig.Parse(conversationConfig),
	}
	for k, v := range cc.Agent.DynamicVariables.Placeholders {
		out.DynamicVariables[k] = scalarString(v)
	}
	for _, raw := range cc.Agent.Prompt.Tools {
		var t struct {
			ID          string          `json:"id"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
			APISchema   struct {
				RequestBodySchema json.RawMessage `json:"request_body_schema"`
			} `json:"api_schema"`
		}
		if json.Unmarshal(raw, &t) != nil || t.Name == "" {
			continue
		}
		params := t.Parameters
		if len(params) == 0 {
			params = t.APISchema.RequestBodySchema
		}
		out.Tools = append(out.Tools, Tool{ID: t.ID, Name: t.Name, Description: t.Description, Parameters: params})
	}
	return out
}

func scalarString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

var placeholder = regexp.MustCompile(`\{\{\s*([A-Za-z0-9_\-.]+)\s*\}\}`)

// Substitute replaces {{name}} with the variable's value; unknown
// variables stay as written, so a missing one is visible in the reply.
func Substitute(s string, vars map[string]string) string {
	return placeholder.ReplaceAllStringFunc(s, func(m string) string {
		name := strings.TrimSpace(m[2 : len(m)-2])
		if v, ok := vars[name]; ok {
			return v
		}
		return m
	})
}
