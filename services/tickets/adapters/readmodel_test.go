package adapters

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/app/readmodeltest"
)

// The store read model on the embedded store (and on MongoDB in the
// container tier, VOICEAI_TEST_DOCKER=1).
func TestStoreReadModelConforms(t *testing.T) {
	// The embedded store evaluates every filter by reading each document:
	// a smaller fixture.
	readmodeltest.Run(t, 90, testenv.OnFreshDatabases(t, "tickets_conformance", storeReadModel))
}

// The store answers a page with one query shaped for its index: the
// filters, the keyset condition and the order are in the query, and the
// limit is the page and one.
func TestStoreQueryShape(t *testing.T) {
	q := app.Query{WorkspaceID: "ws", ByPriority: true, Limit: 50,
		Filter: app.Filter{AgentID: "agent_1", Status: "open", Assignee: "unassigned", Label: "tone"}}
	got := fmt.Sprint(Filter(q))
	for _, want := range []string{`{"workspace_id":"ws"}`, `{"deleted":false}`, `{"agent_id":"agent_1"}`, `{"status":"open"}`, `{"assignee_user_id":null}`, `{"labels":"tone"}`} {
		if !strings.Contains(got, want) {
			t.Errorf("filter %s lacks %q", got, want)
		}
	}
	if s := Sort(q); len(s) != 3 || s[0].Key != "priority_rank" || s[1].Key != "created_at_unix_ms" || s[2].Key != "_id" {
		t.Errorf("sort %v", s)
	}
	b := before(app.Position{Rank: 3, Created: 10, ID: "tkt_1"}, true)
	if fmt.Sprint(b) != fmt.Sprint(bson.D{{Key: "$or", Value: bson.A{
		bson.D{{Key: "priority_rank", Value: bson.D{{Key: "$lt", Value: 3}}}},
		bson.D{{Key: "priority_rank", Value: 3}, {Key: "$or", Value: bson.A{
			bson.D{{Key: "created_at_unix_ms", Value: bson.D{{Key: "$lt", Value: int64(10)}}}},
			bson.D{{Key: "created_at_unix_ms", Value: int64(10)}, {Key: "_id", Value: bson.D{{Key: "$lt", Value: "tkt_1"}}}},
		}}},
	}}}) {
		t.Errorf("keyset condition %v", b)
	}
}

// On a real MongoDB (the container tier) every listing query is answered
// from an index: the plan has no collection scan.
func TestStoreQueriesUseAnIndex(t *testing.T) {
	db := testenv.PlanDatabase(t, "plans")
	if _, err := NewReadModel(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	after := &app.Position{Rank: 2, Created: 10, ID: "tkt_1"}
	for _, q := range []app.Query{
		{WorkspaceID: "ws", Limit: 100},
		{WorkspaceID: "ws", Limit: 100, ByPriority: true, After: after},
		{WorkspaceID: "ws", Limit: 100, Filter: app.Filter{AgentID: "agent_1", Status: "open"}},
		{WorkspaceID: "ws", Limit: 100, ByPriority: true, Filter: app.Filter{AgentID: "agent_1"}, After: after},
	} {
		filter := Filter(q)
		if q.After != nil {
			filter = bson.D{{Key: "$and", Value: bson.A{filter, before(*q.After, q.ByPriority)}}}
		}
		text := testenv.FindPlan(t, db, bson.D{{Key: "find", Value: TicketsCollection}, {Key: "filter", Value: filter},
			{Key: "sort", Value: Sort(q)}, {Key: "limit", Value: q.Limit + 1}})
		if strings.Contains(text, "COLLSCAN") || !strings.Contains(text, "IXSCAN") {
			t.Errorf("%+v: plan %s", q.Filter, text)
		}
	}
}

// storeReadModel is NewReadModel as the conformance suite takes it.
func storeReadModel(ctx context.Context, db *mongo.Database) (app.ReadModel, error) {
	return NewReadModel(ctx, db)
}
