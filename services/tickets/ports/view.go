package ports

import (
	"encoding/json"
	"maps"
	"slices"

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
	AgentID           string                    `json:"agent_id"`
	ConversationID    string                    `json:"conversation_id"`
	Status            string                    `json:"status"`
	Metadata          conversationMeta          `json:"metadata"`
	Analysis          wire.ConversationAnalysis `json:"analysis"`
	HasAudio          bool                      `json:"has_audio"`
	HasUserAudio      bool                      `json:"has_user_audio"`
	HasResponseAudio  bool                      `json:"has_response_audio"`
	HasAuxiliaryAudio bool                      `json:"has_auxiliary_audio"`
	Transcript        json.RawMessage           `json:"transcript"`
	TagIDs            []string                  `json:"tag_ids"`
	TriageTickets     []ticketView              `json:"triage_tickets"`
	// EvaluationLabel is the current label of the analysis (our
	// extension), null when it has none.
	EvaluationLabel *wire.VerdictLabel `json:"evaluation_label"`
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

// analysisOf is what the call stack reported at the call's end (its
// outcome, summary, criteria results and data), replaced, except the
// data, by the latest re-judged analysis when there is one.
func analysisOf(c app.ConversationDetail) wire.ConversationAnalysis {
	v := wire.ConversationAnalysis{CallSuccessful: c.CallSuccessful, ReportedCallSuccessful: c.CallSuccessful, TranscriptSummary: c.Summary}
	rep, kept := reportedOf(c)
	v.DataCollectionResults = rep.DataCollection
	an := c.Analysis
	if an == nil {
		reported := make([]wire.CriterionVerdict, 0, len(c.Evaluations))
		for _, id := range slices.Sorted(maps.Keys(c.Evaluations)) {
			verdict := wire.CriterionVerdict{ID: id, Result: c.Evaluations[id]}
			if kept {
				verdict.Rationale = rep.Rationales[id]
			}
			reported = append(reported, verdict)
		}
		v.SetCriteria(reported...)
		return v
	}
	v.CallSuccessful, v.TranscriptSummary = an.CallSuccessful, an.TranscriptSummary
	judged := make([]wire.CriterionVerdict, len(an.Criteria))
	for i, cr := range an.Criteria {
		judged[i] = wire.CriterionVerdict{ID: cr.ID, Result: cr.Result, Rationale: cr.Rationale}
	}
	v.SetCriteria(judged...)
	v.Judge = &wire.AnalysisJudge{AnalysisID: an.AnalysisID, Provider: an.JudgeProvider, Model: an.JudgeModel, AnalysedAtUnix: an.AnalysedAtMs / 1000}
	return v
}

// reported is what the call stack reported of a conversation, as far as
// its GET shows it beyond the summary: each item collected, with its
// value as it came and its rationale, and each criterion's rationale.
type reported struct {
	DataCollection map[string]wire.DataCollected
	Rationales     map[string]string // by criterion id
}

// reportedOf is the conversation's reported analysis (kept true), or,
// until it is kept (a moment after the conversation's end), what the
// summary holds of it: the values as text, no rationales.
func reportedOf(c app.ConversationDetail) (r reported, kept bool) {
	r.DataCollection = map[string]wire.DataCollected{}
	var raw struct {
		Evaluations map[string]struct {
			Rationale *string `json:"rationale"`
		} `json:"evaluation_criteria_results"`
		DataCollection map[string]struct {
			ID         *string         `json:"data_collection_id"`
			Value      json.RawMessage `json:"value"`
			Rationale  *string         `json:"rationale"`
			JSONSchema json.RawMessage `json:"json_schema"`
		} `json:"data_collection_results"`
	}
	if c.Reported == nil || json.Unmarshal(c.Reported, &raw) != nil {
		for id, value := range c.DataCollection {
			text, _ := json.Marshal(value)
			r.DataCollection[id] = wire.DataCollected{DataCollectionID: id, Value: text}
		}
		return r, false
	}
	for id, d := range raw.DataCollection {
		item := wire.DataCollected{DataCollectionID: id, Value: d.Value, Rationale: deref(d.Rationale)}
		if d.ID != nil && *d.ID != "" {
			item.DataCollectionID = *d.ID
		}
		if len(d.Value) == 0 {
			item.Value = json.RawMessage("null") // reported, nothing collected
		}
		if len(d.JSONSchema) > 0 && string(d.JSONSchema) != "null" {
			item.JSONSchema = d.JSONSchema
		}
		r.DataCollection[id] = item
	}
	r.Rationales = make(map[string]string, len(raw.Evaluations))
	for id, e := range raw.Evaluations {
		r.Rationales[id] = deref(e.Rationale)
	}
	return r, true
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func orNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func labelViewOf(l app.VerdictLabel) wire.VerdictLabel {
	v := wire.VerdictLabel{Kind: l.Kind, InvocationID: orNil(l.InvocationID), RunID: orNil(l.RunID), ConversationID: orNil(l.ConversationID),
		LabelID: l.LabelID, TestName: orNil(l.TestName), JudgeModel: l.JudgeModel, JudgedResult: l.JudgedResult,
		LabelVerdict: wire.LabelVerdict{VerdictCorrect: l.VerdictCorrect, Overturned: !l.VerdictCorrect, CorrectedResult: orNil(l.CorrectedResult),
			Criteria: make([]wire.CriterionLabel, 0, len(l.Criteria)), Note: l.Note,
			Reviewer: wire.Reviewer{UserID: l.Reviewer.UserID, Email: l.Reviewer.Email, Name: l.Reviewer.Name}, LabelledAtUnix: l.LabelledAtMs / 1000}}
	for _, c := range l.Criteria {
		v.Criteria = append(v.Criteria, wire.CriterionLabel{ID: c.ID, Text: c.Text, Correct: c.Correct, JudgedResult: c.JudgedResult})
	}
	return v
}

// ticketDetailView is one ticket as GET answers it: with the current
// labels of its runs and conversations (our extension).
type ticketDetailView struct {
	ticketView
	VerdictLabels []wire.VerdictLabel `json:"verdict_labels"`
	// DeletedConversations are the ticket's deleted conversations.
	DeletedConversations []string `json:"deleted_conversation_ids"`
}

func detailOf(c app.ConversationDetail) conversationView {
	v := conversationView{
		AgentID: c.AgentID, ConversationID: c.ConversationID, Status: c.Status,
		Metadata:   conversationMeta{StartTimeUnix: c.StartedAtMs / 1000, CallDurationSecs: c.DurationSecs},
		Analysis:   analysisOf(c),
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
	if c.Label != nil {
		l := labelViewOf(*c.Label)
		v.EvaluationLabel = &l
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
