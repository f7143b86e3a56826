package app

import (
	"context"
	"encoding/json"
	"strings"

	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/ids"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/agents/domain"
)

// CreateInput is a new agent: the spec's flat fields and the public
// nested configuration.
type CreateInput struct {
	Name               *string         `json:"name"`
	SystemPrompt       *string         `json:"system_prompt"`
	AgentType          *string         `json:"agent_type"`
	Tags               []string        `json:"tags"`
	ConversationConfig json.RawMessage `json:"conversation_config"`
	PlatformSettings   json.RawMessage `json:"platform_settings"`
	Workflow           json.RawMessage `json:"workflow"`
}

// DefaultName is used when a create names no agent, as the public API does.
const DefaultName = "Untitled agent"

// Create validates in and appends AgentCreated. With a command id (the
// Idempotency-Key header) a retried create returns the first result.
func (a *App) Create(ctx context.Context, caller principal.Caller, in CreateInput) (*agentsv1.Agent, error) {
	commandID := caller.CommandID
	agent, err := buildAgent(in)
	if err != nil {
		return nil, err
	}
	if err := a.checkModel(ctx, caller.Principal, nil, agent.ConversationConfigJson); err != nil {
		return nil, err
	}
	agent.AgentId = ids.New("agent")
	if commandID != "" {
		agent.AgentId = "agent_" + esproto.StableID(caller.WorkspaceID, commandID)
	}
	now := a.Now()
	agent.WorkspaceId, agent.CreatedAtUnix, agent.UpdatedAtUnix = caller.WorkspaceID, now.Unix(), now.Unix()
	agent.CreatedAtUnixNanos = now.UnixNano()
	agent.CreatedByUserId, agent.CreatedByEmail, agent.CreatedByName = caller.UserID, caller.Email, caller.Name

	meta := esproto.Meta(ctx, caller.WorkspaceID, commandID, a.Now())
	binds, err := a.bindingSteps(caller.WorkspaceID, agent.AgentId, commandID, nil, agent.ConversationConfigJson)
	if err != nil {
		return nil, err
	}
	created, _, err := a.Agents.CreateWith(ctx, caller.WorkspaceID, agent.AgentId, meta, &agentsv1.AgentCreated{Meta: meta, Agent: agent}, agent, binds)
	return created, secretGone(err)
}

func buildAgent(in CreateInput) (*agentsv1.Agent, error) {
	// The body's shape (name, tags, agent_type, the prompt's length, the
	// configurations being objects) is checked at the edge against the
	// operation's schema.
	if err := boundConfigs(in.ConversationConfig, in.PlatformSettings, in.Workflow); err != nil {
		return nil, err
	}
	name := DefaultName
	if in.Name != nil {
		name = strings.TrimSpace(*in.Name)
	}
	agentType := ""
	if in.AgentType != nil {
		agentType = *in.AgentType
	}
	config := objectOrEmpty(in.ConversationConfig)
	prompt := domain.PromptOf(config)
	if err := checkPrompts(in.SystemPrompt, config); err != nil {
		return nil, err
	}
	if in.SystemPrompt != nil {
		prompt = *in.SystemPrompt
		var err error
		if config, err = domain.WithPrompt(config, prompt); err != nil {
			return nil, err
		}
	}
	workflow, err := domain.NormalizeWorkflow(in.Workflow)
	if err != nil {
		return nil, err
	}
	return &agentsv1.Agent{
		Name: name, SystemPrompt: prompt, AgentType: agentType, Tags: in.Tags,
		ConversationConfigJson: config, PlatformSettingsJson: objectOrEmpty(in.PlatformSettings),
		WorkflowJson: workflow,
	}, nil
}

// boundConfigs bounds every string of the free-form configurations as
// the prompt is: no schema reaches into them.
func boundConfigs(conversationConfig, platformSettings, workflow json.RawMessage) error {
	var v apperr.Validator
	v.BoundStrings(conversationConfig, domain.MaxPromptLen, "body", "conversation_config")
	v.BoundStrings(platformSettings, domain.MaxPromptLen, "body", "platform_settings")
	v.BoundStrings(workflow, domain.MaxPromptLen, "body", "workflow")
	return v.Err()
}

func objectOrEmpty(raw json.RawMessage) []byte {
	if len(raw) == 0 || string(raw) == "null" {
		return []byte("{}")
	}
	return raw
}

// checkPrompts refuses a body whose system_prompt and
// conversation_config.agent.prompt.prompt (config: the body's own, whole
// or a patch) are two different prompts.
func checkPrompts(systemPrompt *string, config []byte) error {
	if systemPrompt == nil {
		return nil
	}
	if prompt := domain.PromptOf(config); prompt != "" && prompt != *systemPrompt {
		return apperr.ValidationErrors{{Loc: []any{"body", "system_prompt"},
			Msg: "system_prompt contradicts conversation_config.agent.prompt.prompt; send one of them", Type: "value_error"}}
	}
	return nil
}
