package app

import (
	"context"
	"slices"
	"strconv"
	"strings"

	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/cursor"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// ListParams are a listing's query parameters, unparsed.
type ListParams struct {
	PageSize, Status, Assignee, AgentID, ConversationID, SortBy string
	OwnerUserID, IssueType, Label, MergedInto, Search, Cursor   string
	Sources, Priorities                                         []string
}

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

// position is where a page ends, in the listing's order.
type position struct {
	Rank    int    `json:"r,omitempty"`
	Created int64  `json:"c"`
	ID      string `json:"i"`
}

// List returns one page of tickets of the workspace (of one agent when
// agentID is set). Order: newest first by creation (millisecond, then id,
// both immutable, so paging while tickets are created never repeats or
// skips one), or by priority, most urgent first, then newest.
func (a *App) List(ctx context.Context, codec *cursor.Codec, workspaceID string, p ListParams) (Page, error) {
	var v httpx.Validator
	limit := 100
	if p.PageSize != "" {
		n, err := strconv.Atoi(p.PageSize)
		v.Check(err == nil && n >= 1 && n <= 100, "Input should be an integer between 1 and 100", "value_error", "query", "page_size")
		limit = n
	}
	if p.Status != "" {
		v.Check(slices.Contains(domain.Statuses, p.Status), "Input should be one of "+strings.Join(domain.Statuses, ", "), "enum", "query", "status")
	}
	for i, s := range p.Sources {
		v.Check(slices.Contains(domain.Sources, s), "Input should be 'qa', 'agent' or 'manual'", "enum", "query", "sources", i)
	}
	for i, s := range p.Priorities {
		v.Check(slices.Contains(domain.Priorities, s), "Input should be 'low', 'medium', 'high' or 'urgent'", "enum", "query", "priorities", i)
	}
	if p.IssueType != "" {
		v.Check(slices.Contains(domain.IssueTypes, p.IssueType), "Input should be a known issue type", "enum", "query", "issue_type")
	}
	byPriority := false
	switch p.SortBy {
	case "", "created_at":
	case "priority":
		byPriority = true
	default:
		v.Add("Input should be 'created_at' or 'priority'", "enum", "query", "sort_by")
	}
	scope := strings.Join([]string{"tickets", workspaceID, p.Status, p.Assignee, p.AgentID, p.ConversationID, p.SortBy, p.OwnerUserID,
		p.IssueType, p.Label, p.MergedInto, p.Search, strings.Join(p.Sources, ","), strings.Join(p.Priorities, ",")}, "\x1e")
	var after *position
	if p.Cursor != "" {
		var pos position
		if err := codec.Decode(scope, p.Cursor, &pos); err != nil {
			v.Add("Invalid cursor: it is corrupted or belongs to other filters", "value_error", "query", "cursor")
		} else {
			after = &pos
		}
	}
	if err := v.Err(); err != nil {
		return Page{}, err
	}

	cands, err := a.ReadModel.Candidates(ctx, workspaceID, p.AgentID, p.Status)
	if err != nil {
		return Page{}, err
	}
	var rows []Listed
	for _, t := range cands {
		if !a.Directory.AgentExists(workspaceID, t.AgentId) || !matches(t, p) {
			continue
		}
		row := Listed{Ticket: t}
		if p.Search != "" {
			if row.Match = search(t, p.Search); row.Match == nil {
				continue
			}
		}
		rows = append(rows, row)
	}
	key := func(t *ticketsv1.Ticket) position {
		pos := position{Created: t.CreatedAtUnixMs, ID: t.TicketId}
		if byPriority {
			pos.Rank = domain.PriorityRank(t.Priority)
		}
		return pos
	}
	slices.SortFunc(rows, func(x, y Listed) int { return comparePos(key(y.Ticket), key(x.Ticket)) })
	if after != nil {
		i := 0
		for i < len(rows) && comparePos(key(rows[i].Ticket), *after) >= 0 {
			i++
		}
		rows = rows[i:]
	}
	page := Page{Tickets: rows}
	if len(rows) > limit {
		page.Tickets, page.HasMore = rows[:limit], true
		next, err := codec.Encode(scope, key(rows[limit-1].Ticket))
		if err != nil {
			return Page{}, err
		}
		page.NextCursor = &next
	}
	return page, nil
}

// comparePos orders positions ascending: rank, then creation, then id.
func comparePos(x, y position) int {
	switch {
	case x.Rank != y.Rank:
		return x.Rank - y.Rank
	case x.Created != y.Created:
		if x.Created < y.Created {
			return -1
		}
		return 1
	default:
		return strings.Compare(x.ID, y.ID)
	}
}

func matches(t *ticketsv1.Ticket, p ListParams) bool {
	switch {
	case p.Assignee == "unassigned" && t.AssigneeUserId != nil,
		p.Assignee != "" && p.Assignee != "unassigned" && t.GetAssigneeUserId() != p.Assignee,
		p.ConversationID != "" && !slices.Contains(t.ConversationIds, p.ConversationID),
		len(p.Sources) > 0 && !slices.Contains(p.Sources, t.Source),
		len(p.Priorities) > 0 && !slices.Contains(p.Priorities, t.Priority),
		p.OwnerUserID == "agent" && t.Source != domain.SourceAgent,
		p.OwnerUserID != "" && p.OwnerUserID != "agent" && t.OwnerUserId != p.OwnerUserID,
		p.IssueType != "" && t.IssueType != p.IssueType,
		p.Label != "" && !slices.Contains(t.Labels, p.Label),
		p.MergedInto != "" && t.GetMergedIntoTicketId() != p.MergedInto:
		return false
	}
	return true
}

// search looks for q, case-insensitively, in the title, the QA comment
// (the public "description"), the comments and the turn comments, in that
// order, and says where it matched.
func search(t *ticketsv1.Ticket, q string) *Match {
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
	lower, lq := strings.ToLower(text), strings.ToLower(strings.Join(strings.Fields(q), " "))
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

// isBoundary reports whether i starts a UTF-8 character.
func isBoundary(s string, i int) bool { return i >= len(s) || s[i] < 0x80 || s[i] >= 0xC0 }
