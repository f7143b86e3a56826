package memory

import (
	"testing"

	"github.com/voiceai-platform/voiceai/services/agents/app"
	"github.com/voiceai-platform/voiceai/services/agents/app/readmodeltest"
	"github.com/voiceai-platform/voiceai/services/agents/app/secretmodeltest"
)

// The memory adapters pass the suites the store's pass (in package
// adapters).

func TestReadModelConforms(t *testing.T) {
	readmodeltest.Run(t, func(*testing.T) app.ReadModel { return NewReadModel() })
}

func TestCallLogConforms(t *testing.T) {
	readmodeltest.RunCallLog(t, func(*testing.T) app.CallLog { return NewCallLog() })
}

func TestSecretsConform(t *testing.T) {
	secretmodeltest.Run(t, func(*testing.T) (app.SecretReadModel, app.ReadModel) {
		agents := NewReadModel()
		return NewSecrets(agents), agents
	})
}
