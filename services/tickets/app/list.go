package app

import (
	"cmp"
	"context"
	"strings"

	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/cursor"
)

// ListParams are a listing's query parameters, decoded and checked
// against the document at the edge (api.DecodeQuery): ranges and enums
// hold.
type ListParams struct {
	PageSize       int      `json:"page_size"` // 0: the default, 100
	Status         string   `json:"status"`
	Assignee       string   `json:"assignee_user_id"` // "unassigned": none; "@me": the caller (Me)
	AgentID        string   `json:"agent_id"`
	ConversationID string   `json:"conversation_id"`
	SortBy         string   `json:"sort_by"`       // "created_at" (default) or "priority"
	OwnerUserID    string   `json:"owner_user_id"` // "agent": opened by the agent
	IssueType      string   `json:"issue_type"`
	Label          string   `json:"label"`
	MergedInto     string   `json:"merged_into_ticket_id"`
	Search         string   `json:"search"`
	Cursor         string   `json:"cursor"`
	Sources        []string `json:"sources"`
	Priorities     []string `json:"priorities"`
	// Me is the caller's user id, which "@me" names (set by the port,
	// never read from the query).
	Me string `json:"-"`
}

// Me is how a user id parameter or field names the caller.
const Me = "@me"

// Match says where a search matched.
type Match struct {
	Field          string `json:"field"`
	Snippet        string `json:"snippet"`
	HighlightStart int    `json:"highlight_start"`
	HighlightEnd   int    `json:"highlight_end"`
	TurnIndex      *int32 `json:"turn_index,omitempty"`
}

// Listed is a ticket in a page, with its search match when searching.
type Listed struct {
	Ticket *ticketsv1.Ticket
	Match  *Match
}

// Page is one page of a listing.
type Page struct {
	Tickets    []Listed
	NextCursor *string
	HasMore    bool
}

// List returns one page of tickets of the workspace (of one agent when
// agentID is set). Order: newest first by creation (millisecond, then id,
// both immutable, so paging while tickets are created never repeats or
// skips one), or by priority, most urgent first, then newest.
func (a *App) List(ctx context.Context, workspaceID string, p ListParams) (Page, error) {
	limit, byPriority := cmp.Or(p.PageSize, 100), p.SortBy == "priority"
	if p.Assignee == Me {
		// The caller's tickets; a caller with no user id has none (an
		// id no ticket is assigned to, not "" which lists every one).
		p.Assignee = cmp.Or(p.Me, Me)
	}
	scope := cursor.Scope("tickets", workspaceID, p.Status, p.Assignee, p.AgentID, p.ConversationID, p.SortBy, p.OwnerUserID,
		p.IssueType, p.Label, p.MergedInto, p.Search, strings.Join(p.Sources, ","), strings.Join(p.Priorities, ","))
	after, err := cursor.After[Position](a.Cursors, scope, p.Cursor)
	if err != nil {
		return Page{}, err
	}

	tickets, more, err := a.ReadModel.Page(ctx, Query{
		WorkspaceID: workspaceID, ByPriority: byPriority, After: after, Limit: limit,
		Filter: Filter{AgentID: p.AgentID, Status: p.Status, Assignee: p.Assignee, ConversationID: p.ConversationID,
			OwnerUserID: p.OwnerUserID, IssueType: p.IssueType, Label: p.Label, MergedInto: p.MergedInto,
			Sources: p.Sources, Priorities: p.Priorities, Search: p.Search},
		KeepAgent: func(agentID string) bool { return !a.Directory.AgentDeleted(agentID) },
	})
	if err != nil {
		return Page{}, err
	}
	page := Page{Tickets: make([]Listed, 0, len(tickets)), HasMore: more}
	for _, t := range tickets {
		row := Listed{Ticket: t}
		if p.Search != "" {
			row.Match = SearchIn(t, p.Search)
		}
		page.Tickets = append(page.Tickets, row)
	}
	if more {
		page.NextCursor, err = cursor.Next(a.Cursors, scope, PositionOf(tickets[len(tickets)-1], byPriority))
	}
	return page, err
}

// SearchIn looks for q, case-insensitively, in the title, the QA comment
// (the public "description"), the comments and the turn comments, in that
// order, and says where it matched. Each text is searched with its white
// space folded (SearchText), so a match lies inside one text.
func SearchIn(t *ticketsv1.Ticket, q string) *Match {
	if m := matchIn("title", t.Title, q); m != nil {
		return m
	}
	if m := matchIn("description", t.GetQaComment(), q); m != nil {
		return m
	}
	for _, c := range t.TicketComments {
		if m := matchIn("comment", c.Comment, q); m != nil {
			return m
		}
	}
	for _, c := range t.TurnComments {
		if m := matchIn("turn_comment", c.Comment, q); m != nil {
			idx := c.TurnIndex
			m.TurnIndex = &idx
			return m
		}
	}
	return nil
}

// matchIn returns a whitespace-collapsed snippet of text around the first
// case-insensitive occurrence of q, with the match's offsets (in bytes of
// the snippet), or nil.
func matchIn(field, text, q string) *Match {
	text = strings.Join(strings.Fields(text), " ")
	lower, lq := strings.ToLower(text), SearchText(q)
	i := strings.Index(lower, lq)
	if lq == "" || i < 0 {
		return nil
	}
	if len(lower) != len(text) {
		text = lower // lowering changed byte lengths: keep offsets true
	}
	const context = 40
	start, end := max(0, i-context), min(len(text), i+len(lq)+context)
	for start > 0 && !isBoundary(text, start) {
		start--
	}
	for end < len(text) && !isBoundary(text, end) {
		end++
	}
	snippet, offset := text[start:end], 0
	if start > 0 {
		snippet, offset = "…"+snippet, len("…")
	}
	if end < len(text) {
		snippet += "…"
	}
	return &Match{Field: field, Snippet: snippet, HighlightStart: offset + i - start, HighlightEnd: offset + i - start + len(lq)}
}

// SearchText is text as a search compares it: white space folded to one
// space, lower case. A search for q matches a text whose SearchText holds
// SearchText(q).
func SearchText(text string) string { return strings.ToLower(strings.Join(strings.Fields(text), " ")) }

// isBoundary reports whether i starts a UTF-8 character.
func isBoundary(s string, i int) bool { return i >= len(s) || s[i] < 0x80 || s[i] >= 0xC0 }
