package app

import (
	"context"
	"slices"
)

// AssignableUsers lists the people a ticket of the agent can be assigned
// to: the workspace's members but its service accounts, as the public API
// lists them. Every member can see every agent of its workspace here, so
// has_access is true for all but the locked, whom no ticket is assigned
// to (listed, as the API lists members without access).
func (a *App) AssignableUsers(ctx context.Context, workspaceID, agentID string) ([]Member, error) {
	if err := a.RequireAgent(ctx, workspaceID, agentID); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(a.Directory.Members(workspaceID), func(m Member) bool { return m.IsServiceAccount }), nil
}
