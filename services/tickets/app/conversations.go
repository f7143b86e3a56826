package app

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/cursor"
)

// Conversation statuses, as the public API names them.
const (
	ConversationInProgress = "in-progress"
	ConversationDone       = "done"
)

// Call outcomes (call_successful), as the public API names them.
var CallOutcomes = []string{"success", "failure", "unknown"}

// ConversationSummary is a conversation as a listing shows it, learnt
// from the conversation_started / conversation_ended events its call
// stack sends.
type ConversationSummary struct {
	WorkspaceID    string
	ConversationID string
	AgentID        string
	StartedAtMs    int64 // first seen; it orders listings
	EndedAtMs      int64 // 0 while in progress
	DurationSecs   int64
	// DurationReported says the call stack gave the duration; else it is
	// the time from the start to the end.
	DurationReported bool
	MessageCount     int
	Status           string // ConversationInProgress or ConversationDone
	CallSuccessful   string // one of CallOutcomes
}

// ConversationPosition is where a conversation stands in a listing
// (newest first); a cursor carries it. Both parts are fixed once the
// conversation is first seen.
type ConversationPosition struct {
	StartedAtMs int64  `json:"s"`
	ID          string `json:"i"`
}

// Position is c's place in a listing.
func (c ConversationSummary) Position() ConversationPosition {
	return ConversationPosition{StartedAtMs: c.StartedAtMs, ID: c.ConversationID}
}

// Compare orders positions ascending: start, then id.
func (p ConversationPosition) Compare(o ConversationPosition) int {
	switch {
	case p.StartedAtMs < o.StartedAtMs:
		return -1
	case p.StartedAtMs > o.StartedAtMs:
		return 1
	}
	return strings.Compare(p.ID, o.ID)
}

// ConversationQuery is one page of a conversations listing: newest first,
// strictly after After.
type ConversationQuery struct {
	WorkspaceID    string
	AgentID        string
	CallSuccessful string
	StartedBefore  int64 // unix seconds, exclusive; 0 = no bound
	StartedAfter   int64 // unix seconds, exclusive; 0 = no bound
	After          *ConversationPosition
	Limit          int
}

// Matches is the meaning of the filters; every index implements exactly
// this.
func (q ConversationQuery) Matches(c ConversationSummary) bool {
	switch {
	case q.AgentID != "" && c.AgentID != q.AgentID,
		q.CallSuccessful != "" && c.CallSuccessful != q.CallSuccessful,
		q.StartedBefore != 0 && c.StartedAtMs >= q.StartedBefore*1000,
		q.StartedAfter != 0 && c.StartedAtMs <= q.StartedAfter*1000+999:
		return false
	}
	return true
}

// Conversations is what the service knows of every conversation: a
// summary per conversation, in listing order, kept from the platform
// stream.
type Conversations interface {
	// ConversationPage returns up to q.Limit conversations of the
	// workspace matching q, newest first, and whether more follow. It
	// costs the page (plus what the filters skip), not the workspace.
	ConversationPage(q ConversationQuery) (page []ConversationSummary, more bool)
	// ConversationSummary looks one conversation up.
	ConversationSummary(workspaceID, conversationID string) (ConversationSummary, bool)
}

// Transcripts keeps the transcripts call stacks hand over on
// conversation_ended.
type Transcripts interface {
	// Transcript is the conversation's turns in the public transcript
	// shape (a JSON array), or nil when none was handed over (yet).
	Transcript(ctx context.Context, workspaceID, conversationID string) (json.RawMessage, error)
}

// ConversationParams are a conversations listing's query parameters, as
// the edge decoded and checked them (api.DecodeQuery).
type ConversationParams struct {
	PageSize       int    `json:"page_size"`
	AgentID        string `json:"agent_id"`
	CallSuccessful string `json:"call_successful"`
	StartedBefore  int64  `json:"call_start_before_unix"`
	StartedAfter   int64  `json:"call_start_after_unix"`
	Cursor         string `json:"cursor"`
}

// ConversationPage is one page of a conversations listing.
type ConversationPage struct {
	Conversations []ConversationSummary
	NextCursor    *string
	HasMore       bool
}

// ListConversations returns one page of the workspace's conversations,
// newest first. Paging while conversations arrive never repeats or skips
// one that existed when paging began.
func (a *App) ListConversations(workspaceID string, p ConversationParams) (ConversationPage, error) {
	q := ConversationQuery{WorkspaceID: workspaceID, AgentID: p.AgentID, CallSuccessful: p.CallSuccessful, Limit: 30,
		StartedBefore: p.StartedBefore, StartedAfter: p.StartedAfter}
	if p.PageSize > 0 {
		q.Limit = p.PageSize
	}
	scope := cursor.Scope("conversations", workspaceID, p.AgentID, p.CallSuccessful,
		strconv.FormatInt(p.StartedBefore, 10), strconv.FormatInt(p.StartedAfter, 10))
	after, err := cursor.After[ConversationPosition](a.Cursors, scope, p.Cursor)
	if err != nil {
		return ConversationPage{}, err
	}
	q.After = after
	rows, more := a.Conversations.ConversationPage(q)
	page := ConversationPage{Conversations: rows, HasMore: more}
	if more {
		page.NextCursor, err = cursor.Next(a.Cursors, scope, rows[len(rows)-1].Position())
	}
	return page, err
}

// ConversationDetail is one conversation with its transcript and the
// tickets raised on it.
type ConversationDetail struct {
	ConversationSummary
	Transcript json.RawMessage // nil: none handed over
	Tickets    []*ticketsv1.Ticket
	// Analysis is its latest re-judged analysis (nil: none), Label the
	// current label of that analysis (nil: none).
	Analysis *Analysis
	Label    *VerdictLabel
}

// conversationTickets bounds the tickets a conversation shows: one is
// active at a time, the others resolved or merged.
const conversationTickets = 100

// GetConversation returns a conversation of the workspace.
func (a *App) GetConversation(ctx context.Context, workspaceID, conversationID string) (ConversationDetail, error) {
	c, ok := a.Conversations.ConversationSummary(workspaceID, conversationID)
	if !ok {
		return ConversationDetail{}, apperr.ConversationUnknown
	}
	transcript, err := a.Transcripts.Transcript(ctx, workspaceID, conversationID)
	if err != nil {
		return ConversationDetail{}, err
	}
	tickets, _, err := a.ReadModel.Page(ctx, Query{
		WorkspaceID: workspaceID, Limit: conversationTickets,
		Filter: Filter{AgentID: c.AgentID, ConversationID: conversationID},
	})
	if err != nil {
		return ConversationDetail{}, err
	}
	d := ConversationDetail{ConversationSummary: c, Transcript: transcript, Tickets: tickets}
	if a.Verdicts != nil {
		if d.Analysis, err = a.Verdicts.Analysis(ctx, workspaceID, conversationID); err != nil {
			return ConversationDetail{}, err
		}
		labels, err := a.Verdicts.Labels(ctx, workspaceID, []LabelKey{{Kind: LabelOfConversation, ConversationID: conversationID}})
		if err != nil {
			return ConversationDetail{}, err
		}
		if len(labels) > 0 {
			d.Label = &labels[0]
		}
	}
	return d, nil
}
