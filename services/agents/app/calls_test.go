package app_test

import (
	"context"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/cursor"
	"github.com/voiceai-platform/voiceai/services/agents/adapters"
	"github.com/voiceai-platform/voiceai/services/agents/app"
)

// A listed agent shows its latest call from the call log; one never
// called shows none, and another workspace's call of the same id is not
// its call.
func TestTheListingShowsEachAgentsLastCall(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	calls := adapters.NewMemoryCallLog()
	f.app.Calls = calls
	called, err := f.app.Create(ctx, f.caller, app.CreateInput{Name: ptr("Called")}, "")
	if err != nil {
		t.Fatal(err)
	}
	quiet, err := f.app.Create(ctx, f.caller, app.CreateInput{Name: ptr("Quiet")}, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := calls.Record(ctx, []app.Call{
		{WorkspaceID: "ws_a", AgentID: called.GetAgentId(), AtUnix: 1_800_000_300},
		{WorkspaceID: "ws_a", AgentID: called.GetAgentId(), AtUnix: 1_800_000_100},
		{WorkspaceID: "ws_b", AgentID: quiet.GetAgentId(), AtUnix: 1_800_000_200},
	}); err != nil {
		t.Fatal(err)
	}
	page, err := f.app.List(ctx, cursor.NewCodec([]byte("k")), "ws_a", "user_1", app.ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	last := map[string]*int64{}
	for _, d := range page.Agents {
		last[d.ID] = d.LastCallUnix
	}
	if at := last[called.GetAgentId()]; len(page.Agents) != 2 || at == nil || *at != 1_800_000_300 {
		t.Fatalf("the called agent's last call: %v (of %d agents), want 1800000300", at, len(page.Agents))
	}
	if at := last[quiet.GetAgentId()]; at != nil {
		t.Fatalf("an agent never called in its workspace shows a last call: %d", *at)
	}
}
