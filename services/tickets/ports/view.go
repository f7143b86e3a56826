package ports

import (
	"encoding/json"

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

func rowOf(c app.ConversationSummary) wire.ConversationRow {
	return wire.ConversationRow{
		AgentID: c.AgentID, ConversationID: c.ConversationID, StartTimeUnix: c.StartedAtMs / 1000,
		CallDurationSecs: c.DurationSecs, MessageCount: c.MessageCount, Status: c.Status, CallSuccessful: c.CallSuccessful,
	}
}

// conversationView is one conversation in the public shape, with the
// tickets raised on it (our extension: triage_tickets).
type conversationView struct {
	AgentID           string           `json:"agent_id"`
	ConversationID    string           `json:"conversation_id"`
	Status            string           `json:"status"`
	Metadata          conversationMeta `json:"metadata"`
	Analysis          analysisView     `json:"analysis"`
	HasAudio          bool             `json:"has_audio"`
	HasUserAudio      bool             `json:"has_user_audio"`
	HasResponseAudio  bool             `json:"has_response_audio"`
	HasAuxiliaryAudio bool             `json:"has_auxiliary_audio"`
	Transcript        json.RawMessage  `json:"transcript"`
	TriageTickets     []ticketView     `json:"triage_tickets"`
}

type conversationMeta struct {
	StartTimeUnix    int64 `json:"start_time_unix_secs"`
	CallDurationSecs int64 `json:"call_duration_secs"`
}

type analysisView struct {
	CallSuccessful    string `json:"call_successful"`
	TranscriptSummary string `json:"transcript_summary"`
}

func detailOf(c app.ConversationDetail) conversationView {
	v := conversationView{
		AgentID: c.AgentID, ConversationID: c.ConversationID, Status: c.Status,
		Metadata:   conversationMeta{StartTimeUnix: c.StartedAtMs / 1000, CallDurationSecs: c.DurationSecs},
		Analysis:   analysisView{CallSuccessful: c.CallSuccessful},
		Transcript: c.Transcript, TriageTickets: make([]ticketView, 0, len(c.Tickets)),
	}
	if v.Transcript == nil {
		v.Transcript = json.RawMessage("[]")
	}
	for _, t := range c.Tickets {
		v.TriageTickets = append(v.TriageTickets, viewOf(t, nil))
	}
	return v
}
