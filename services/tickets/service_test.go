package tickets

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	events "github.com/voiceai-platform/voiceai/proto-events"
	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"

	"github.com/voiceai-platform/voiceai/pkg/config"
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
	w := startWithAgent(t, config.ReadIndexStore)
	ctx, d, svc, do := w.ctx, w.deps, w.svc, w.do
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
	rebuilt := w.db.Collection("tickets_rebuilt")
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

// started is a tickets service a test calls, with what it runs on.
type started struct {
	ctx  context.Context
	deps runtime.Deps
	db   *mongo.Database // the service's own database
	svc  *Service
	do   func(method, path, body string) map[string]any // a call as caller, answered 2xx
}

// startWithAgent starts the service on a fresh environment, its listings
// reading index, with agent agent_1 of workspace ws_a known to it.
func startWithAgent(t *testing.T, index string) started {
	t.Helper()
	env := testenv.New(t)
	mc := env.Mongo(t)
	d := runtimetest.Deps(t, env.Conn(t), mc)
	d.ReadIndex = index
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
	testkit.Eventually(t, 5*time.Second, "the agent known", func() bool { return svc.App.Directory.AgentExists("ws_a", "agent_1") })
	return started{ctx: ctx, deps: d, db: mc.Database(runtime.DatabaseName(Name)), svc: svc, do: do}
}

// Behind the in-memory index the store keeps no copy of the tickets:
// neither the store listings' collection nor the copy of states earlier
// versions wrote (tickets_state) is written, and no durable consumer of
// TICKETS writes one; the index answers from the stream, which it is
// built from again at start.
func TestTheMemoryIndexWritesNoTicketsToTheStore(t *testing.T) {
	w := startWithAgent(t, config.ReadIndexMemory)
	ctx, do := w.ctx, w.do
	var ids []string
	for i := range 3 {
		m := do("POST", "/v1/convai/agents/agent_1/triage-tickets", fmt.Sprintf(`{"qa_comment":"ticket %d"}`, i))
		ids = append(ids, m["agentqa_ticket_id"].(string))
	}
	do("PATCH", "/v1/convai/triage-tickets/"+ids[0], `{"status":"in_progress"}`)
	do("DELETE", "/v1/convai/triage-tickets/"+ids[1], "")
	if got := do("GET", "/v1/convai/triage-tickets/"+ids[0], ""); got["status"] != "in_progress" {
		t.Fatalf("the index answers %v", got)
	}
	for _, coll := range []string{adapters.TicketsCollection, "tickets_state"} {
		if names, _ := w.db.ListCollectionNames(ctx, bson.D{{Key: "name", Value: coll}}); len(names) != 0 {
			t.Errorf("the store's collection %s is written behind the memory index", coll)
		}
	}
	str, err := w.deps.JS.Stream(ctx, events.TicketsStream)
	if err != nil {
		t.Fatal(err)
	}
	for name := range str.ListConsumers(ctx).Info() {
		if name.Config.Durable == adapters.ProjectorDurable || name.Config.Durable == "tickets-state" {
			t.Errorf("the durable %s writes tickets to the store behind the memory index", name.Config.Durable)
		}
	}
	// Built again from the stream, the index holds what was written.
	followed := memory.NewIndex()
	if err := followTickets(ctx, w.deps, followed, nil, nil); err != nil {
		t.Fatal(err)
	}
	listed, _, err := followed.Page(ctx, app.Query{WorkspaceID: "ws_a", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 2 || listed[1].GetStatus() != "in_progress" {
		t.Fatalf("the index built from the stream lists %v, want 2 tickets (one of 3 deleted), the first created in progress", listed)
	}
}
