package adapters

import (
	"context"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/services/agents/app"
	"github.com/voiceai-platform/voiceai/services/agents/app/readmodeltest"
	"github.com/voiceai-platform/voiceai/services/agents/app/secretmodeltest"
	"go.mongodb.org/mongo-driver/v2/mongo"
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
