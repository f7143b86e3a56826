package adapters

import (
	"context"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/services/identity/app"
	"github.com/voiceai-platform/voiceai/services/identity/app/readmodeltest"
)

// The store read model on the embedded store (and on MongoDB in the
// container tier, VOICEAI_TEST_DOCKER=1).
func TestStoreReadModelConforms(t *testing.T) {
	// The embedded store scans every document of a listing: a shorter
	// history.
	readmodeltest.Run(t, 150, testenv.OnFreshDatabases(t, "identity_conformance", storeReadModel))
}

// On a real MongoDB (the container tier) every listing query is answered
// from an index: the plan has no collection scan.
func TestStoreQueriesUseAnIndex(t *testing.T) {
	db := testenv.PlanDatabase(t, "identity_plans")
	if _, err := NewReadModel(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	ws := bson.D{{Key: "workspace_id", Value: "ws"}}
	for _, q := range []struct {
		coll   string
		filter bson.D
	}{
		{AccountsCollection, ws}, {UsersCollection, ws},
		{KeysCollection, KeysFilter("ws", "")}, {KeysCollection, KeysFilter("ws", "sa_1")},
	} {
		text := testenv.FindPlan(t, db, bson.D{{Key: "find", Value: q.coll}, {Key: "filter", Value: q.filter}, {Key: "sort", Value: byCreation}})
		if strings.Contains(text, "COLLSCAN") || strings.Contains(text, "stage:SORT") || !strings.Contains(text, "IXSCAN") {
			t.Errorf("%s %v: plan %s", q.coll, q.filter, text)
		}
	}
}

// storeReadModel is NewReadModel as the conformance suite takes it.
func storeReadModel(ctx context.Context, db *mongo.Database) (app.ReadModel, error) {
	return NewReadModel(ctx, db)
}
