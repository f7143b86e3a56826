package adapters

import (
	"context"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/services/agents/app"
	"github.com/voiceai-platform/voiceai/services/agents/app/readmodeltest"
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

// storeReadModel is NewReadModel as the conformance suite takes it.
func storeReadModel(ctx context.Context, db *mongo.Database) (app.ReadModel, error) {
	return NewReadModel(ctx, db)
}
