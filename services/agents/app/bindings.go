package app

import (
	"errors"
	"slices"

	"google.golang.org/protobuf/proto"

	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"

	"github.com/voiceai-platform/voiceai/pkg/agentconfig"
	"github.com/voiceai-platform/voiceai/pkg/aggregate"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
)

// bindingSteps are the changes to the workspace's secrets that keep their
// bound agent lists (WorkspaceSecret.bound_agent_ids) true as agentID's
// conversation configuration goes from before (nil: a new agent) to after
// (nil: a deleted agent). Stored in one batch with the agent's event, a
// binding and the secret's deletion, which reads the list, conflict: one
// of them decides again. A secret the agent keeps and is already listed
// in changes nothing and takes no part.
func (a *App) bindingSteps(workspaceID, agentID, commandID string, before, after []byte) ([]*aggregate.Step, error) {
	if before != nil && after != nil && string(before) == string(after) {
		return nil, nil
	}
	was, now := agentconfig.Parse(before).SecretIDs(), agentconfig.Parse(after).SecretIDs()
	var steps []*aggregate.Step
	for _, id := range now {
		s, err := a.Secrets.Step(workspaceID, id, aggregate.CommandFor(commandID, id), bound(agentID, true))
		if err != nil {
			return nil, err
		}
		steps = append(steps, s)
	}
	for _, id := range was {
		if slices.Contains(now, id) {
			continue
		}
		// A secret gone before the agent stopped using it (a binding older
		// than the list) has no list to leave.
		s, err := a.Secrets.StepIfExists(workspaceID, id, aggregate.CommandFor(commandID, id), bound(agentID, false))
		if err != nil {
			return nil, err
		}
		steps = append(steps, s)
	}
	return steps, nil
}

// bound puts agentID in the secret's bound agents (in) or takes it out,
// keeping the list sorted; nothing when it already is as asked.
func bound(agentID string, in bool) aggregate.Mutation[*agentsv1.WorkspaceSecret] {
	return func(next *agentsv1.WorkspaceSecret, meta *commonv1.EventMeta) (proto.Message, error) {
		i, listed := slices.BinarySearch(next.BoundAgentIds, agentID)
		switch {
		case in && !listed:
			next.BoundAgentIds = slices.Insert(next.BoundAgentIds, i, agentID)
		case !in && listed:
			next.BoundAgentIds = slices.Delete(next.BoundAgentIds, i, i+1)
		default:
			return nil, nil
		}
		return &agentsv1.SecretUpdated{Meta: meta, Secret: next, ChangedFields: []string{"bound_agent_ids"}}, nil
	}
}

// secretGone is a binding's secret deleted after the configuration was
// checked: answered as the check answers a secret that does not exist.
func secretGone(err error) error {
	if errors.Is(err, apperr.SecretNotFound) {
		return apperr.ValidationErrors{{Loc: []any{"body", "conversation_config"},
			Msg: "No workspace secret with that id exists in this workspace", Type: "value_error"}}
	}
	return err
}
