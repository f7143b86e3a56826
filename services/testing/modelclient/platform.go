package modelclient

import (
	"context"

	"github.com/voiceai-platform/voiceai/services/testing/model"
)

// PlatformAgents plays agents through the platform's own model provider
// (VOICEAI_LLM_*): an agent whose llm the provider serves gets that model,
// any other the provider's default. The agent's temperature and max
// tokens apply to its turns.
type PlatformAgents struct {
	Default model.Model
	Served  map[string]model.Model // by the llm an agent names
}

// For answers the model that plays the agent.
func (p PlatformAgents) For(_ context.Context, _ string, cfg model.AgentConfig, _ map[string]string) (model.AgentModel, error) {
	m, ok := p.Served[cfg.LLM]
	if !ok {
		m = p.Default
	}
	if o, ok := m.(OpenAI); ok {
		o.Temperature = cfg.Model.Temperature
		if t := cfg.Model.MaxTokens; t != nil && *t > 0 {
			o.MaxTokens = *t
		}
		return o, nil
	}
	return m, nil
}
