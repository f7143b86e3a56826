package ports

import (
	"github.com/voiceai-platform/voiceai/pkg/api"
)

// createFromConversation answers 201 {"id"} with the new regression test
// (an extension of the public API: the creation is a new resource).
func (h *Handlers) CreateTestFromConversation(c *api.Call) (any, error) {
	body, err := c.RawBody()
	if err != nil {
		return nil, err
	}
	t, err := h.App.CreateTestFromConversation(c.Context(), c.Caller(), body)
	if err != nil {
		return nil, err
	}
	return map[string]any{"id": t.GetTestId()}, nil
}
