package ports

import (
	"github.com/voiceai-platform/voiceai/pkg/api"
)

// CreateTestFromConversation answers 201 {"id"} with the new regression
// test (an extension of the public API: the creation is a new resource).
func (h *Handlers) CreateTestFromConversation(c *api.Call) (any, error) {
	return createTest(c, h.App.CreateTestFromConversation)
}
