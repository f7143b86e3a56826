// Package runner executes test runs: it plays the agent's next turn from
// its configuration and the test's chat history through a model, then
// judges the reply. Workers pull run jobs from the TESTJOBS work queue.
package runner

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
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

// Turn is one message of a conversation.
type Turn struct {
	Role       string // "system", "user", "agent" or "tool"
	Text       string
	Calls      []Call
	ToolCallID string
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
	Transcript      []Turn // the conversation before the reply
	Reply           Turn
}

// Verdict is the judge's decision.
type Verdict struct {
	Result   string // success | failure | unknown
	Messages []string
	Summary  string
}

// Usage is what a model call cost.
type Usage struct {
	PromptTokens, CompletionTokens, TotalTokens int64
	Calls                                       int32
}

// Add sums usages.
func (u *Usage) Add(o Usage) {
	u.PromptTokens += o.PromptTokens
	u.CompletionTokens += o.CompletionTokens
	u.TotalTokens += o.TotalTokens
	u.Calls += o.Calls
}

// Model plays the agent and judges its replies.
type Model interface {
	Provider() string
	ModelName() string
	Respond(ctx context.Context, c Conversation) (Turn, Usage, error)
	Judge(ctx context.Context, in JudgeInput) (Verdict, Usage, error)
}

// AgentConfig is what a run needs of the agent's configuration.
type AgentConfig struct {
	SystemPrompt     string
	FirstMessage     string
	LLM              string
	Tools            []Tool
	DynamicVariables map[string]string
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
		DynamicVariables: map[string]string{},
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
