// Package runner executes test runs: it plays the agent's next turn from
// its configuration and the test's chat history through a model, then
// judges the reply; a simulation test plays a whole conversation with a
// simulated user (simulate.go). Workers pull run jobs from the TESTJOBS
// work queue.
package runner

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/voiceai-platform/voiceai/pkg/agentconfig"
	"github.com/voiceai-platform/voiceai/services/testing/model"
)

// The types models speak are package model's (the offline model and the
// model clients implement model.Model); the runner names them as its own.
type (
	Tool          = model.Tool
	Call          = model.Call
	Turn          = model.Turn
	Conversation  = model.Conversation
	JudgeInput    = model.JudgeInput
	UserInput     = model.UserInput
	UserTurn      = model.UserTurn
	Verdict       = model.Verdict
	Usage         = model.Usage
	Model         = model.Model
	Deterministic = model.Deterministic
)

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
