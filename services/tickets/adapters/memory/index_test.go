package memory

import (
	"testing"

	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/app/readmodeltest"
)

// The memory index passes the suite the store's read model passes (in
// package adapters).
func TestIndexConforms(t *testing.T) {
	readmodeltest.Run(t, 600, func(*testing.T) app.ReadModel { return NewIndex() })
}
