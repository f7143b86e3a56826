package memory

import (
	"testing"

	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/app/advisortest"
)

func TestAdvisorConforms(t *testing.T) {
	advisortest.Run(t, func(_ *testing.T, mind advisortest.Mind) app.ClusterAdvisor {
		return &Advisor{Model: "test/triage", Judge: mind}
	})
}
