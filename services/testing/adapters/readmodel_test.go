package adapters

import (
	"context"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/app/readmodeltest"
	"go.mongodb.org/mongo-driver/v2/mongo"
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
