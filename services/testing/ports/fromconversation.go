package ports

import (
	"net/http"

	"github.com/voiceai-platform/voiceai/pkg/httpx"
)

// maxConversationBody bounds a from-conversation body: a long call's
// transcript, tool results included. The gateway's own limit
// (VOICEAI_MAX_BODY_BYTES) usually applies first.
const maxConversationBody = 4 << 20

// createFromConversation answers 201 {"id"} with the new regression test
// (an extension of the public API: the creation is a new resource).
func (h *handlers) CreateTestFromConversation(w http.ResponseWriter, r *http.Request) error {
	body, err := httpx.ReadBody(r, maxConversationBody)
	if err != nil {
		return err
	}
	t, err := h.app.CreateTestFromConversation(r.Context(), caller(r), body)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusCreated, map[string]any{"id": t.GetTestId()})
	return nil
}
