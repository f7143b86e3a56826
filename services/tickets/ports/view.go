package ports

import (
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/wire"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// ticketView is a ticket on the wire (the same shape ticket_* webhook
// events carry), with what a search matched when it came from one.
type ticketView struct {
	wire.Ticket
	SearchMatch *app.Match `json:"search_match,omitempty"`
}

type pageView struct {
	Tickets    []ticketView `json:"agent_conversation_tickets"`
	NextCursor *string      `json:"next_cursor"`
	HasMore    bool         `json:"has_more"`
}

func viewOf(t *ticketsv1.Ticket, m *app.Match) ticketView {
	return ticketView{Ticket: wire.TicketOf(t), SearchMatch: m}
}
