package ports

import (
	"net/http"

	"github.com/gorilla/mux"

	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/pkg/principal"
)

// DeleteConversation answers {} as the public API's delete does; a
// second delete is a 404, the conversation being gone.
func (h *Handlers) DeleteConversation(w http.ResponseWriter, r *http.Request) error {
	if err := h.App.DeleteConversation(r.Context(), principal.Of(r).WorkspaceID, mux.Vars(r)["conversation_id"]); err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{})
	return nil
}

// deletedConversations are those of the ticket's conversations that were
// deleted.
func (h *Handlers) deletedConversations(t *ticketsv1.Ticket) []string {
	out := []string{}
	for _, id := range t.GetConversationIds() {
		if h.App.ConversationDeleted(t.GetWorkspaceId(), id) {
			out = append(out, id)
		}
	}
	return out
}
