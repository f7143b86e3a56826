package ports

import (
	"net/http"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
)

// createFromConversation answers 201 {"id"} with the new regression test
// (an extension of the public API: the creation is a new resource).
func (h *Handlers) CreateTestFromConversation(w http.ResponseWriter, r *http.Request) error {
	body, err := httpx.ReadBody(r)
	if err != nil {
		return err
	}
	t, err := h.App.CreateTestFromConversation(r.Context(), api.CallerOf(r), body)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusCreated, map[string]any{"id": t.GetTestId()})
	return nil
}
