package adapters

import (
	"context"
	"fmt"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/app/readmodeltest"
)

func TestMemoryIndexConforms(t *testing.T) {
	readmodeltest.Run(t, 1, func(*testing.T) app.ReadModel { return NewMemoryIndex() })
}

// The store read model on the embedded store (and on MongoDB in the
// container tier, VOICEAI_TEST_DOCKER=1).
func TestStoreReadModelConforms(t *testing.T) {
	client := testenv.New(t).Mongo(t)
	n := 0
	// The embedded store reads every document of a query (seconds per page
	// walk under -race): a smaller history.
	readmodeltest.Run(t, 0.3, func(t *testing.T) app.ReadModel {
		n++
		rm, err := NewReadModel(context.Background(), client.Database(fmt.Sprintf("conformance_%d", n)))
		if err != nil {
			t.Fatal(err)
		}
		return rm
	})
}
