package app

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"

	"github.com/voiceai-platform/voiceai/pkg/aggregate"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/agents/domain"
)

// UpdateInput is a partial update: absent fields stay; the conversation
// configuration and platform settings are JSON merge patches (RFC 7386),
// as in the public API. A workflow is a graph whose nodes and edges only
// make sense together, so a given one replaces the agent's whole.
type UpdateInput struct {
	Name               *string         `json:"name"`
	SystemPrompt       *string         `json:"system_prompt"`
	AgentType          *string         `json:"agent_type"`
	Tags               *[]string       `json:"tags"`
	ConversationConfig json.RawMessage `json:"conversation_config"`
	PlatformSettings   json.RawMessage `json:"platform_settings"`
	Workflow           json.RawMessage `json:"workflow"`
}

// Update applies in to the agent. With a command id (an Idempotency-Key)
// a replay of the same request answers the first result; the key sent
// with another body is refused (esproto.SameRequest).
func (a *App) Update(ctx context.Context, caller principal.Caller, agentID string, in UpdateInput) (*agentsv1.Agent, error) {
	workspaceID, commandID := caller.WorkspaceID, caller.CommandID
	// The body's shape is checked at the edge against the operation's
	// schema.
	if err := boundConfigs(in.ConversationConfig, in.PlatformSettings, in.Workflow); err != nil {
		return nil, err
	}
	var before []byte // the configuration the attempt changed
	updated, err := a.Agents.UpdateWith(ctx, workspaceID, agentID, commandID, func(next *agentsv1.Agent, meta *commonv1.EventMeta) (proto.Message, error) {
		before = slices.Clone(next.ConversationConfigJson)
		changed, err := applyUpdate(next, in)
		if err != nil || len(changed) == 0 {
			return nil, err
		}
		if slices.Contains(changed, "conversation_config") {
			if err := a.checkModel(ctx, caller.Principal, before, next.ConversationConfigJson); err != nil {
				return nil, err
			}
		}
		return &agentsv1.AgentUpdated{Meta: meta, Agent: next, ChangedFields: changed}, nil
	}, func(next *agentsv1.Agent) ([]*aggregate.Step, error) {
		return a.bindingSteps(workspaceID, agentID, commandID, before, next.ConversationConfigJson)
	})
	return updated, secretGone(err)
}

// applyUpdate mutates ag and names the fields that changed.
func applyUpdate(ag *agentsv1.Agent, in UpdateInput) ([]string, error) {
	var changed []string
	set := func(field string, differs bool) {
		if differs {
			changed = append(changed, field)
		}
	}
	if in.Name != nil {
		name := strings.TrimSpace(*in.Name)
		set("name", name != ag.Name)
		ag.Name = name
	}
	if in.AgentType != nil {
		set("agent_type", *in.AgentType != ag.AgentType)
		ag.AgentType = *in.AgentType
	}
	if in.Tags != nil {
		set("tags", !slices.Equal(*in.Tags, ag.Tags))
		ag.Tags = *in.Tags
	}
	if err := checkPrompts(in.SystemPrompt, in.ConversationConfig); err != nil {
		return nil, err
	}
	// patch merges a JSON merge patch into one of the configurations,
	// reporting whether there was one.
	patch := func(field string, config *[]byte, p json.RawMessage) (bool, error) {
		if len(p) == 0 || string(p) == "null" {
			return false, nil
		}
		merged, err := domain.Merge(*config, p)
		if err != nil {
			return false, apperr.ValidationErrors{{Loc: []any{"body", field}, Msg: "Cannot merge: " + err.Error(), Type: "value_error"}}
		}
		set(field, string(merged) != string(*config))
		*config = merged
		return true, nil
	}
	patched, err := patch("conversation_config", &ag.ConversationConfigJson, in.ConversationConfig)
	if err != nil {
		return nil, err
	}
	if patched {
		ag.SystemPrompt = domain.PromptOf(ag.ConversationConfigJson)
	}
	if in.SystemPrompt != nil {
		merged, err := domain.WithPrompt(ag.ConversationConfigJson, *in.SystemPrompt)
		if err != nil {
			return nil, err
		}
		set("system_prompt", *in.SystemPrompt != ag.SystemPrompt)
		ag.ConversationConfigJson, ag.SystemPrompt = merged, *in.SystemPrompt
	}
	if _, err := patch("platform_settings", &ag.PlatformSettingsJson, in.PlatformSettings); err != nil {
		return nil, err
	}
	if len(in.Workflow) > 0 && string(in.Workflow) != "null" {
		workflow, err := domain.NormalizeWorkflow(in.Workflow)
		if err != nil {
			return nil, err
		}
		set("workflow", string(workflow) != string(ag.WorkflowJson))
		ag.WorkflowJson = workflow
	}
	return changed, nil
}

// Delete removes the agent. The event keeps its last state, so
// subscribers (tickets, testing) know exactly what went away. With a
// command id a replay answers as the first did.
func (a *App) Delete(ctx context.Context, caller principal.Caller, agentID string) error {
	workspaceID, commandID := caller.WorkspaceID, caller.CommandID
	_, err := a.Agents.UpdateWith(ctx, workspaceID, agentID, commandID, func(next *agentsv1.Agent, meta *commonv1.EventMeta) (proto.Message, error) {
		now := a.Now().Unix()
		next.DeletedAtUnix = &now
		return &agentsv1.AgentDeleted{Meta: meta, Agent: next}, nil
	}, func(next *agentsv1.Agent) ([]*aggregate.Step, error) {
		// It leaves the lists of the secrets it used.
		return a.bindingSteps(workspaceID, agentID, commandID, next.ConversationConfigJson, nil)
	})
	return err
}
