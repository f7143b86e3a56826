package app

import "context"

// Call is one call of an agent, as the platform reported it.
type Call struct {
	WorkspaceID string
	AgentID     string
	AtUnix      int64 // when the call started, in unix seconds
}

// CallLog keeps when each agent was last called, which a listing shows
// as last_call_time_unix_secs. It follows the calls the platform reports
// (PLATFORM's call_started and conversation_started), not the agents' own
// events, so it is kept beside the agent read model rather than in it;
// adapters implement it and pass readmodeltest.RunCallLog.
type CallLog interface {
	// Record keeps each call's time, unless a later call of the same
	// agent is kept already: calls may arrive in any order, and again.
	Record(ctx context.Context, calls []Call) error
	// LastCalls maps each of the workspace's agentIDs that has a call
	// kept to the time of its latest.
	LastCalls(ctx context.Context, workspaceID string, agentIDs []string) (map[string]int64, error)
}

// withLastCalls sets each listed agent's last call from the call log.
func (a *App) withLastCalls(ctx context.Context, workspaceID string, docs []AgentDoc) error {
	if a.Calls == nil || len(docs) == 0 {
		return nil
	}
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	last, err := a.Calls.LastCalls(ctx, workspaceID, ids)
	if err != nil {
		return err
	}
	for i := range docs {
		if at, ok := last[docs[i].ID]; ok {
			docs[i].LastCallUnix = &at
		}
	}
	return nil
}
