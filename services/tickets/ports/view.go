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

func rowOf(c app.ConversationSummary, withSummary bool) wire.ConversationRow {
	row := wire.ConversationRow{
		AgentID: c.AgentID, ConversationID: c.ConversationID, StartTimeUnix: c.StartedAtMs / 1000,
		CallDurationSecs: c.DurationSecs, MessageCount: c.MessageCount, Status: c.Status, CallSuccessful: c.CallSuccessful,
		ToolNames: c.ToolNames, TagIDs: c.TagIDs,
	}
	if r := c.Rating(); r != 0 {
		row.Rating = &r
	}
	if withSummary {
		row.TranscriptSummary = &c.Summary
	}
	return row
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
	TagIDs            []string         `json:"tag_ids"`
	TriageTickets     []ticketView     `json:"triage_tickets"`
}

type conversationMeta struct {
	StartTimeUnix    int64         `json:"start_time_unix_secs"`
	CallDurationSecs int64         `json:"call_duration_secs"`
	Feedback         *feedbackView `json:"feedback,omitempty"`
}

// feedbackView is the public conversation feedback: one feedback is kept
// (the last), so likes and dislikes are 0 or 1.
type feedbackView struct {
	OverallScore *string `json:"overall_score"`
	Likes        int     `json:"likes"`
	Dislikes     int     `json:"dislikes"`
	Rating       *int    `json:"rating"`
}

type analysisView struct {
	CallSuccessful    string                    `json:"call_successful"`
	TranscriptSummary string                    `json:"transcript_summary"`
	Evaluations       map[string]evaluationView `json:"evaluation_criteria_results,omitempty"`
	DataCollection    map[string]dataView       `json:"data_collection_results,omitempty"`
}

// evaluationView and dataView are the public results; the rationale is
// not kept (listings filter on the result and the value): it is empty.
type evaluationView struct {
	CriteriaID string `json:"criteria_id"`
	Result     string `json:"result"`
	Rationale  string `json:"rationale"`
}

type dataView struct {
	DataCollectionID string `json:"data_collection_id"`
	Value            string `json:"value"`
	Rationale        string `json:"rationale"`
}

func detailOf(c app.ConversationDetail) conversationView {
	v := conversationView{
		AgentID: c.AgentID, ConversationID: c.ConversationID, Status: c.Status,
		Metadata:   conversationMeta{StartTimeUnix: c.StartedAtMs / 1000, CallDurationSecs: c.DurationSecs},
		Analysis:   analysisView{CallSuccessful: c.CallSuccessful, TranscriptSummary: c.Summary},
		Transcript: c.Transcript, TagIDs: c.TagIDs, TriageTickets: make([]ticketView, 0, len(c.Tickets)),
	}
	if v.TagIDs == nil {
		v.TagIDs = []string{}
	}
	if c.Feedback != "" {
		f, r := &feedbackView{OverallScore: &c.Feedback}, c.Rating()
		f.Rating = &r
		if c.Feedback == "like" {
			f.Likes = 1
		} else {
			f.Dislikes = 1
		}
		v.Metadata.Feedback = f
	}
	for id, result := range c.Evaluations {
		if v.Analysis.Evaluations == nil {
			v.Analysis.Evaluations = map[string]evaluationView{}
		}
		v.Analysis.Evaluations[id] = evaluationView{CriteriaID: id, Result: result}
	}
	for id, value := range c.DataCollection {
		if v.Analysis.DataCollection == nil {
			v.Analysis.DataCollection = map[string]dataView{}
		}
		v.Analysis.DataCollection[id] = dataView{DataCollectionID: id, Value: value}
	}
	if v.Transcript == nil {
		v.Transcript = json.RawMessage("[]")
	}
	for _, t := range c.Tickets {
		v.TriageTickets = append(v.TriageTickets, viewOf(t, nil))
	}
	return v
}

// tagView is a conversation tag in the public shape.
type tagView struct {
	TagID       string  `json:"tag_id"`
	WorkspaceID string  `json:"workspace_id"`
	OwnerUserID string  `json:"owner_user_id"`
	Title       string  `json:"title"`
	Description *string `json:"description,omitempty"`
	CreatedAt   int64   `json:"created_at_unix_secs"`
}

type tagPage struct {
	Tags       []tagView `json:"conversation_tags"`
	NextCursor *string   `json:"next_cursor"`
	HasMore    bool      `json:"has_more"`
}

func tagOf(t *ticketsv1.ConversationTag) tagView {
	return tagView{TagID: t.TagId, WorkspaceID: t.WorkspaceId, OwnerUserID: t.OwnerUserId, Title: t.Title, Description: t.Description, CreatedAt: t.CreatedAtUnixSecs}
}
