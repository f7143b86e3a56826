package adapters

import (
	"context"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/services/agents/app"
	"github.com/voiceai-platform/voiceai/services/agents/app/readmodeltest"
)

func TestMemoryReadModelConforms(t *testing.T) {
	readmodeltest.Run(t, func(*testing.T) app.ReadModel { return NewMemoryReadModel() })
}

// The store read model on the embedded store (and on MongoDB in the
// container tier, VOICEAI_TEST_DOCKER=1).
func TestStoreReadModelConforms(t *testing.T) {
	readmodeltest.Run(t, func(t *testing.T) app.ReadModel {
		rm, err := NewReadModel(context.Background(), testenv.New(t).Mongo(t).Database("conformance"))
		if err != nil {
			t.Fatal(err)
		}
		return rm
	})
}
