package readmodeltest

import (
	"context"
	"maps"
	"testing"

	"github.com/voiceai-platform/voiceai/services/agents/app"
)

// RunCallLog is the conformance suite of the call log: each agent keeps
// its latest call, whatever order calls arrive in and however often, and
// a workspace sees its own agents' calls only.
func RunCallLog(t *testing.T, open func(*testing.T) app.CallLog) {
	ctx := context.Background()
	want := func(t *testing.T, l app.CallLog, ws string, ids []string, expect map[string]int64) {
		t.Helper()
		got, err := l.LastCalls(ctx, ws, ids)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got, expect) {
			t.Fatalf("last calls of %v in %s: %v, want %v", ids, ws, got, expect)
		}
	}
	call := func(ws, agent string, at int64) app.Call {
		return app.Call{WorkspaceID: ws, AgentID: agent, AtUnix: at}
	}

	t.Run("the latest call is kept, in any order and again", func(t *testing.T) {
		l := open(t)
		want(t, l, "ws_a", []string{"agent_1"}, map[string]int64{})
		for _, batch := range [][]app.Call{
			{call("ws_a", "agent_1", 200), call("ws_a", "agent_1", 100)}, // one batch, latest first
			{call("ws_a", "agent_2", 50)},
			{call("ws_a", "agent_1", 150)}, // older than the one kept
			{call("ws_a", "agent_2", 50)},  // the same call again
			{},
		} {
			if err := l.Record(ctx, batch); err != nil {
				t.Fatal(err)
			}
		}
		want(t, l, "ws_a", []string{"agent_1", "agent_2", "agent_3"}, map[string]int64{"agent_1": 200, "agent_2": 50})
		if err := l.Record(ctx, []app.Call{call("ws_a", "agent_2", 60)}); err != nil {
			t.Fatal(err)
		}
		want(t, l, "ws_a", []string{"agent_2"}, map[string]int64{"agent_2": 60})
	})

	t.Run("workspaces apart", func(t *testing.T) {
		l := open(t)
		if err := l.Record(ctx, []app.Call{call("ws_a", "agent_1", 100), call("ws_b", "agent_1", 300), call("ws_b", "agent_2", 400)}); err != nil {
			t.Fatal(err)
		}
		want(t, l, "ws_a", []string{"agent_1", "agent_2"}, map[string]int64{"agent_1": 100})
		want(t, l, "ws_b", []string{"agent_1"}, map[string]int64{"agent_1": 300})
		want(t, l, "ws_c", []string{"agent_1", "agent_2"}, map[string]int64{})
	})
}
