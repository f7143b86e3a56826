package app

import (
	"context"
)

// AssignableUsers lists the workspace members a ticket of the agent can be
// assigned to. Every member can see every agent of its workspace here, so
// has_access is true for all.
func (a *App) AssignableUsers(ctx context.Context, workspaceID, agentID string) ([]Member, error) {
	if err := a.RequireAgent(ctx, workspaceID, agentID); err != nil {
		return nil, err
	}
	return a.Directory.Members(workspaceID), nil
}
