package ports

import (
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/api"
)

// DeleteConversation answers {} as the public API's delete does; a
// second delete is a 404, the conversation being gone, but for the keyed
// request that deleted it, sent again.
func (h *Handlers) DeleteConversation(c *api.Call) (any, error) {
	if err := h.App.DeleteConversation(c.Context(), c.Caller(), c.ID()); err != nil {
		return nil, err
	}
	return map[string]any{}, nil
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
