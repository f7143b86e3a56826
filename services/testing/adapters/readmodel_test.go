package adapters

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/app/readmodeltest"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// The store read model on the embedded store (and on MongoDB in the
// container tier, VOICEAI_TEST_DOCKER=1).
func TestStoreReadModelConforms(t *testing.T) {
	// The embedded store reads every document of a query: a smaller
	// history.
	readmodeltest.Run(t, 0.3, testenv.OnFreshDatabases(t, "testing_conformance", storeReadModel))
}

// storeReadModel is NewReadModel as the conformance suite takes it.
func storeReadModel(ctx context.Context, db *mongo.Database) (app.ReadModel, error) {
	return NewReadModel(ctx, db)
}

// A store made before tests, folders and invocations were listed by their
// nanosecond: its documents lack created_at_unix_nanos, which a keyset
// condition on the field passes over, and its indexes are of the old
// order. Opened again, everything is listed, in every page size, the old
// ones after the new of their second, and the old indexes are gone.
func TestAStoreOfTheSecondsOrderIsBroughtOver(t *testing.T) {
	ctx := context.Background()
	db := testenv.New(t).Mongo(t).Database("testing_nanos_upgrade")
	entries, invocations := db.Collection(EntriesCollection), db.Collection(InvocationsCollection)
	old := map[*mongo.Collection][]bson.D{
		entries: {{{Key: "workspace_id", Value: 1}, {Key: "deleted", Value: 1}, {Key: "kind", Value: 1}, {Key: "created_at_unix", Value: -1}, {Key: "_id", Value: -1}}},
		invocations: {
			{{Key: "workspace_id", Value: 1}, {Key: "created_at_unix", Value: -1}, {Key: "_id", Value: -1}},
			{{Key: "workspace_id", Value: 1}, {Key: "agent_id", Value: 1}, {Key: "created_at_unix", Value: -1}, {Key: "_id", Value: -1}},
		},
	}
	oldIndexes := map[*mongo.Collection][]string{}
	for coll, indexes := range old {
		for _, keys := range indexes {
			name, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: keys})
			if err != nil {
				t.Fatal(err)
			}
			oldIndexes[coll] = append(oldIndexes[coll], name)
		}
	}
	second := int64(1_700_000_000)
	for _, id := range []string{"old_a", "old_b"} {
		if _, err := invocations.InsertOne(ctx, bson.D{{Key: "_id", Value: "tinv_" + id}, {Key: "workspace_id", Value: "ws"}, {Key: "agent_id", Value: "agent_1"},
			{Key: "created_at_unix", Value: second}, {Key: "status", Value: domain.InvocationCompleted}}); err != nil {
			t.Fatal(err)
		}
		if _, err := entries.InsertOne(ctx, bson.D{{Key: "_id", Value: "test_" + id}, {Key: "workspace_id", Value: "ws"}, {Key: "kind", Value: app.KindTest},
			{Key: "type", Value: domain.TypeLLM}, {Key: "deleted", Value: false}, {Key: "created_at_unix", Value: second}}); err != nil {
			t.Fatal(err)
		}
	}
	rm, err := NewReadModel(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	for seq, nanos := range []int64{second*1e9 + 500, second*1e9 + 900} {
		id := fmt.Sprintf("new_%d", seq)
		if err := rm.ApplyInvocation(ctx, uint64(seq+1), &testingv1.Invocation{InvocationId: "tinv_" + id, WorkspaceId: "ws", AgentId: "agent_1",
			CreatedAtUnix: second, CreatedAtUnixNanos: nanos, Status: domain.InvocationRunning}); err != nil {
			t.Fatal(err)
		}
		if err := rm.ApplyTest(ctx, uint64(seq+1), &testingv1.Test{TestId: "test_" + id, WorkspaceId: "ws", Name: "t", Type: domain.TypeLLM,
			CreatedAtUnix: second, CreatedAtUnixNanos: nanos}); err != nil {
			t.Fatal(err)
		}
	}
	afterInvocation := func(q *app.InvocationFilter, s app.InvocationSummary) string {
		at := s.PositionOf()
		q.After = &at
		return s.ID
	}
	afterEntry := func(q *app.EntryQuery, e app.Entry) string {
		at := e.PositionOf()
		q.After = &at
		return e.ID
	}
	for _, limit := range []int{1, 3, 10} {
		invocations := everyPage(t, app.InvocationFilter{WorkspaceID: "ws", AgentID: "agent_1", Limit: limit}, rm.PageInvocations, afterInvocation)
		tests := everyPage(t, app.EntryQuery{WorkspaceID: "ws", Tests: true, Limit: limit}, rm.PageEntries, afterEntry)
		if want := []string{"tinv_new_1", "tinv_new_0", "tinv_old_b", "tinv_old_a"}; !slices.Equal(invocations, want) {
			t.Fatalf("invocations in pages of %d: %v; want %v", limit, invocations, want)
		}
		if want := []string{"test_new_1", "test_new_0", "test_old_b", "test_old_a"}; !slices.Equal(tests, want) {
			t.Fatalf("tests in pages of %d: %v; want %v", limit, tests, want)
		}
	}
	for coll, retired := range oldIndexes {
		specs, err := coll.Indexes().ListSpecifications(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range specs {
			if slices.Contains(retired, s.Name) {
				t.Errorf("index %s of the old order is still on %s", s.Name, coll.Name())
			}
		}
	}
	// Opened again, it has nothing to bring over.
	if _, err := NewReadModel(ctx, db); err != nil {
		t.Fatal(err)
	}
}

// everyPage pages through q to its end; next moves q past a page's last
// row and names that row.
func everyPage[Q, R any](t *testing.T, q Q, page func(context.Context, Q) ([]R, bool, error), next func(*Q, R) string) []string {
	t.Helper()
	var ids []string
	for {
		rows, more, err := page(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			ids = append(ids, next(&q, r))
		}
		if !more {
			return ids
		}
	}
}
