package tickets

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	events "github.com/voiceai-platform/voiceai/proto-events"
	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/pkg/projection"
	"github.com/voiceai-platform/voiceai/pkg/runtime"
	"github.com/voiceai-platform/voiceai/pkg/runtime/runtimetest"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/tickets/adapters"
	"github.com/voiceai-platform/voiceai/services/tickets/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

var caller = principal.Principal{WorkspaceID: "ws_a", UserID: "sa_1", Permissions: []string{"all"}}

// The read model rebuilt from the TICKETS stream alone gives the same
// listing as the live one.
func TestRebuildReproducesTheListing(t *testing.T) {
	env := testenv.New(t)
	mc := env.Mongo(t)
	d := runtimetest.Deps(t, env.Conn(t), mc)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	// The agent the tickets belong to, as the agents service would publish it.
	ensureOtherStreams(t, ctx, d.JS)
	subject, _ := events.AgentSubject("ws_a", "agent_1")
	meta := esproto.Meta(ctx, "ws_a", "", time.Now())
	if _, err := esproto.Append(ctx, eventstore.New(d.JS, events.AgentsStream), subject, 0, meta,
		&agentsv1.AgentCreated{Meta: meta, Agent: &agentsv1.Agent{AgentId: "agent_1", WorkspaceId: "ws_a", Name: "a"}}); err != nil {
		t.Fatal(err)
	}
	svc, err := Start(ctx, d, Config{Secret: "secret", Snapshots: SnapshotConfig{Every: 20_000}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	do := func(method, path, body string) map[string]any {
		t.Helper()
		return runtimetest.Do(t, svc.Handler, caller, method, path, body)
	}
	testkit.Eventually(t, 5*time.Second, "the condition", func() bool { return svc.App.Directory.AgentExists("ws_a", "agent_1") })
	var ids []string
	for i := range 8 {
		m := do("POST", "/v1/convai/agents/agent_1/triage-tickets", fmt.Sprintf(`{"qa_comment":"ticket %d","priority":"%s"}`, i, []string{"low", "high"}[i%2]))
		ids = append(ids, m["agentqa_ticket_id"].(string))
	}
	do("PATCH", "/v1/convai/triage-tickets/"+ids[0], `{"status":"in_progress","labels":["x"]}`)
	do("POST", "/v1/convai/triage-tickets/"+ids[1]+"/comments", `{"comment":"hello"}`)
	do("POST", "/v1/convai/triage-tickets/"+ids[2]+"/merge", `{"source_ticket_ids":["`+ids[3]+`"]}`)
	do("DELETE", "/v1/convai/triage-tickets/"+ids[4], "")

	if err := projection.WaitCaughtUp(ctx, d.JS, events.TicketsStream, adapters.ProjectorDurable); err != nil {
		t.Fatal(err)
	}
	rebuilt := mc.Database(runtime.DatabaseName(Name)).Collection("tickets_rebuilt")
	if _, err := projection.Rebuild(ctx, d.JS, events.TicketsStream, []string{events.TicketsAll}, rebuilt, adapters.Handler); err != nil {
		t.Fatal(err)
	}
	list := func(rm app.ReadModel, sortBy string) string {
		a := *svc.App
		a.ReadModel = rm
		page, err := a.List(ctx, "ws_a", app.ListParams{SortBy: sortBy})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, row := range page.Tickets {
			b, _ := json.Marshal(row.Ticket)
			out = append(out, string(b))
		}
		return strings.Join(out, "\n")
	}
	// And the index a memory replica builds from the stream.
	followed := memory.NewIndex()
	if err := followTickets(ctx, d, followed, nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, sortBy := range []string{"created_at", "priority"} {
		live, again, memory := list(svc.App.ReadModel, sortBy), list(&adapters.ReadModel{Tickets: rebuilt}, sortBy), list(followed, sortBy)
		if live != again || live != memory || strings.Count(live, "\n") != 6 { // 7 tickets: one deleted
			t.Fatalf("sort_by=%s: a rebuilt listing differs or is wrong:\n  live %s\n again %s\nmemory %s", sortBy, live, again, memory)
		}
	}
}
