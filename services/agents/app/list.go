package app

import (
	"context"
	"strconv"
	"strings"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/cursor"
)

// Page is one page of the agent listing.
type Page struct {
	Agents     []AgentDoc
	NextCursor *string
	HasMore    bool
}

// ListParams are the listing's query parameters, unparsed.
type ListParams struct {
	PageSize, Search, SortBy, SortDirection, Cursor, Archived, CreatedBy string
	Tags                                                                 []string
}

// List validates p and returns one page, newest first by default.
func (a *App) List(ctx context.Context, codec *cursor.Codec, workspaceID, callerID string, p ListParams) (Page, error) {
	var v apperr.Validator
	q := Query{WorkspaceID: workspaceID, Search: strings.TrimSpace(p.Search), Tags: p.Tags, Limit: 30, SortBy: "created_at", Descending: true}
	if p.PageSize != "" {
		n, err := strconv.Atoi(p.PageSize)
		v.Check(err == nil && n >= 1 && n <= 100, "Input should be an integer between 1 and 100", "value_error", "query", "page_size")
		q.Limit = n
	}
	switch p.SortBy {
	case "", "created_at":
	case "name":
		q.SortBy, q.Descending = "name", false
	default:
		v.Add("Input should be 'name' or 'created_at'", "enum", "query", "sort_by")
	}
	switch p.SortDirection {
	case "":
	case "asc", "desc":
		q.Descending = p.SortDirection == "desc"
	default:
		v.Add("Input should be 'asc' or 'desc'", "enum", "query", "sort_direction")
	}
	if p.Archived != "" {
		b, err := strconv.ParseBool(p.Archived)
		v.Check(err == nil, "Input should be a valid boolean", "bool_parsing", "query", "archived")
		q.Archived = &b
	}
	q.CreatedBy = p.CreatedBy
	if q.CreatedBy == "@me" {
		q.CreatedBy = callerID
	}
	// The cursor is bound to the filters it was issued for.
	scope := strings.Join([]string{"agents", workspaceID, q.Search, q.SortBy, strconv.FormatBool(q.Descending), p.Archived, q.CreatedBy, strings.Join(p.Tags, "\x1f")}, "\x1e")
	if p.Cursor != "" {
		var pos Position
		if err := codec.Decode(scope, p.Cursor, &pos); err != nil {
			v.Add(apperr.CursorMessage, "value_error", "query", "cursor")
		} else {
			q.After = &pos
		}
	}
	if err := v.Err(); err != nil {
		return Page{}, err
	}
	limit := q.Limit
	q.Limit = limit + 1 // one more tells whether another page exists
	docs, err := a.ReadModel.List(ctx, q)
	if err != nil {
		return Page{}, err
	}
	page := Page{Agents: docs}
	if len(docs) > limit {
		page.Agents, page.HasMore = docs[:limit], true
		next, err := codec.Encode(scope, PositionOf(q, docs[limit-1]))
		if err != nil {
			return Page{}, err
		}
		page.NextCursor = &next
	}
	return page, nil
}
