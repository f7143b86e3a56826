package memory

import (
	"context"
	"sync"

	"github.com/voiceai-platform/voiceai/services/agents/app"
)

// CallLog is the call log in memory: each replica's own with the memory
// read index (adapters.FollowCallsInto keeps it), and the use-case
// tests' double.
type CallLog struct {
	mu   sync.Mutex
	last map[callKey]int64 // an agent's latest call
}

type callKey struct{ workspaceID, agentID string }

// NewCallLog is an empty call log.
func NewCallLog() *CallLog { return &CallLog{last: map[callKey]int64{}} }

// Record implements app.CallLog.
func (l *CallLog) Record(_ context.Context, calls []app.Call) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range calls {
		k := callKey{c.WorkspaceID, c.AgentID}
		if cur, ok := l.last[k]; !ok || c.AtUnix > cur {
			l.last[k] = c.AtUnix
		}
	}
	return nil
}

// LastCalls implements app.CallLog.
func (l *CallLog) LastCalls(_ context.Context, workspaceID string, agentIDs []string) (map[string]int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int64{}
	for _, id := range agentIDs {
		if at, ok := l.last[callKey{workspaceID, id}]; ok {
			out[id] = at
		}
	}
	return out, nil
}
