package model

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/voiceai-platform/voiceai/pkg/agentconfig"
)

// AgentModel plays an agent's turns: the platform's model under the
// agent's llm, or the agent's own endpoint (custom-llm).
type AgentModel interface {
	Provider() string
	ModelName() string
	Respond(ctx context.Context, c Conversation) (Turn, Usage, error)
}

// AgentModels picks the model that plays a run's agent from its
// configuration. An error fails the run with its message (a secret that
// is gone, an endpoint refused).
type AgentModels interface {
	For(ctx context.Context, workspaceID string, cfg AgentConfig, vars map[string]string) (AgentModel, error)
}

// ResponseCache keeps model answers by key. A cache that fails is a miss:
// it must never fail a run.
type ResponseCache interface {
	Get(ctx context.Context, key string) ([]byte, bool)
	Put(ctx context.Context, key string, value []byte)
}

// Cacheable is implemented by a model whose answers can be kept in a
// ResponseCache: WithCache is the model answering one run (its repeat
// index) through the cache.
type Cacheable interface {
	WithCache(c ResponseCache, repeatIndex int) Model
}

// EndpointError is a failure to reach an agent's own endpoint, or one it
// answered with an error: the run fails with it as it is, not as a
// failure of the platform's model.
type EndpointError struct {
	Err   error
	Fault EndpointFault
}

// EndpointFault is what went wrong with an agent's endpoint.
type EndpointFault int

const (
	// Unreachable: no answer came (the network, a time-out, an open
	// circuit).
	Unreachable EndpointFault = iota
	// Answered: the endpoint was reached and answered, with an error
	// status or with something that is no answer (an HTML page, a body
	// that is not a chat completion), so the fault is not the network's.
	Answered
	// NotCallable: the endpoint could not be called as the agent names it
	// (no or a refused URL, a secret or variable without a value).
	NotCallable
	// Stream: the endpoint began its answer and its stream went wrong
	// (Err says how: no [DONE], stalled, too large, malformed, an error
	// event, cut).
	Stream
)

func (e *EndpointError) Error() string {
	prefix := map[EndpointFault]string{Unreachable: "agent endpoint unreachable: ", Answered: "agent endpoint answered with an error: ",
		NotCallable: "agent endpoint not callable: ", Stream: "agent endpoint stream: "}[e.Fault]
	return prefix + e.Err.Error()
}
func (e *EndpointError) Unwrap() error { return e.Err }

// IsEndpointError reports whether err is (or wraps) an EndpointError.
func IsEndpointError(err error) bool {
	var e *EndpointError
	return errors.As(err, &e)
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
		out.DynamicVariables[k] = ScalarString(v)
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

// ScalarString is a JSON value as text: a string as it is, null as
// nothing, anything else as its JSON.
func ScalarString(v any) string {
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
