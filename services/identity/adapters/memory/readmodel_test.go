package memory

import (
	"testing"

	"github.com/voiceai-platform/voiceai/services/identity/app"
	"github.com/voiceai-platform/voiceai/services/identity/app/readmodeltest"
)

// The memory read model passes the suite the store's passes (in package
// adapters).
func TestReadModelConforms(t *testing.T) {
	readmodeltest.Run(t, 2000, func(*testing.T) app.ReadModel { return NewReadModel() })
}
