package adapters

import (
	"context"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/services/agents/app"
	"github.com/voiceai-platform/voiceai/services/agents/app/readmodeltest"
	"github.com/voiceai-platform/voiceai/services/agents/app/secretmodeltest"
)

// The store read model on the embedded store (and on MongoDB in the
// container tier, VOICEAI_TEST_DOCKER=1).
func TestStoreReadModelConforms(t *testing.T) {
	readmodeltest.Run(t, testenv.OnFreshDatabases(t, "agents_conformance", storeReadModel))
}

func TestStoreCallLogConforms(t *testing.T) {
	readmodeltest.RunCallLog(t, testenv.OnFreshDatabases(t, "agents_calls", func(_ context.Context, db *mongo.Database) (app.CallLog, error) {
		return NewCallLog(db), nil
	}))
}

// The secrets' read model and the agent listing it reads share one
// database.
func TestStoreSecretsConform(t *testing.T) {
	type pair struct {
		secrets app.SecretReadModel
		agents  app.ReadModel
	}
	open := testenv.OnFreshDatabases(t, "agents_secrets", func(ctx context.Context, db *mongo.Database) (pair, error) {
		agents, err := NewReadModel(ctx, db)
		if err != nil {
			return pair{}, err
		}
		secrets, err := NewSecretReadModel(ctx, db)
		return pair{secrets, agents}, err
	})
	secretmodeltest.Run(t, func(t *testing.T) (app.SecretReadModel, app.ReadModel) {
		p := open(t)
		return p.secrets, p.agents
	})
}

// storeReadModel is NewReadModel as the conformance suite takes it.
func storeReadModel(ctx context.Context, db *mongo.Database) (app.ReadModel, error) {
	return NewReadModel(ctx, db)
}

// A listing stored before agents kept the nanosecond they were made: its
// documents lack the field, which the cursor's condition on it passes
// over. Opened again, every agent is listed, in pages of one.
func TestAListingFromBeforeTheNanosecondIsBroughtOver(t *testing.T) {
	ctx := context.Background()
	db := testenv.New(t).Mongo(t).Database("agents_nanos_upgrade")
	c := db.Collection(AgentsCollection)
	if _, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "workspace_id", Value: 1}, {Key: "created_at_unix", Value: -1}, {Key: "_id", Value: -1}}}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"agent_old_a", "agent_old_b"} {
		if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "workspace_id", Value: "ws"}, {Key: "name", Value: id},
			{Key: "name_lower", Value: id}, {Key: "created_at_unix", Value: int64(1_700_000_000)}, {Key: "deleted", Value: false}}); err != nil {
			t.Fatal(err)
		}
	}
	rm, err := NewReadModel(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if err := rm.Apply(ctx, 1, &agentsv1.Agent{AgentId: "agent_new", WorkspaceId: "ws", Name: "new",
		CreatedAtUnix: 1_700_000_000, CreatedAtUnixNanos: 1_700_000_000_000_000_500}); err != nil {
		t.Fatal(err)
	}
	q := app.Query{WorkspaceID: "ws", SortBy: "created_at", Descending: true, Limit: 1}
	var got []string
	for range 10 {
		docs, err := rm.List(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(docs) == 0 {
			break
		}
		got = append(got, docs[0].ID)
		at := app.PositionOf(q, docs[0])
		q.After = &at
	}
	if want := []string{"agent_new", "agent_old_b", "agent_old_a"}; !slices.Equal(got, want) {
		t.Fatalf("pages of one: %v; want %v", got, want)
	}
}
