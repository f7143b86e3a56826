package app

import (
	"context"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
)

// AssignableUsers lists the workspace members a ticket of the agent can be
// assigned to. Every member can see every agent of its workspace here, so
// has_access is true for all.
func (a *App) AssignableUsers(_ context.Context, workspaceID, agentID string) ([]Member, error) {
	if !a.Directory.AgentExists(workspaceID, agentID) {
		return nil, apperr.AgentNotFound
	}
	return a.Directory.Members(workspaceID), nil
}
