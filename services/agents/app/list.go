package app

import (
	"cmp"
	"context"
	"errors"
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

// ListParams are the listing's query parameters, decoded and checked
// against the document at the edge (api.DecodeQuery).
type ListParams struct {
	PageSize      int      `json:"page_size"` // 0: the default, 30
	Search        string   `json:"search"`
	SortBy        string   `json:"sort_by"`        // "created_at" (default), "name" or "call_count_7d" (as created_at)
	SortDirection string   `json:"sort_direction"` // "asc" or "desc"; by default newest or A first
	Cursor        string   `json:"cursor"`
	Archived      *bool    `json:"archived"`
	CreatedBy     string   `json:"created_by_user_id"` // "@me": the caller
	Tags          []string `json:"tags"`
}

// List returns one page, newest first by default.
func (a *App) List(ctx context.Context, workspaceID, callerID string, p ListParams) (Page, error) {
	q := Query{WorkspaceID: workspaceID, Search: strings.TrimSpace(p.Search), Tags: p.Tags, Limit: cmp.Or(p.PageSize, 30),
		SortBy: "created_at", Descending: true, Archived: p.Archived}
	// sort_by=call_count_7d (the SDK's) lists in creation order too: the
	// call log keeps each agent's latest call, and counting its calls over
	// a moving seven days would take every call kept, a recount as the
	// window moves and counts that change between pages.
	if p.SortBy == "name" {
		q.SortBy, q.Descending = "name", false
	}
	if p.SortDirection != "" {
		q.Descending = p.SortDirection == "desc"
	}
	q.CreatedBy = p.CreatedBy
	if q.CreatedBy == "@me" {
		q.CreatedBy = callerID
	}
	// The cursor is bound to the filters it was issued for.
	archived := ""
	if p.Archived != nil {
		archived = strconv.FormatBool(*p.Archived)
	}
	scope := cursor.Scope("agents", workspaceID, q.Search, q.SortBy, strconv.FormatBool(q.Descending), archived, q.CreatedBy, strings.Join(p.Tags, "\x1f"))
	after, err := cursor.After[Position](a.Cursors, scope, p.Cursor)
	if err != nil {
		return Page{}, err
	}
	q.After = after
	limit := q.Limit
	q.Limit = limit + 1 // one more tells whether another page exists
	docs, err := a.ReadModel.List(ctx, q)
	if err != nil {
		return Page{}, err
	}
	page := Page{Agents: docs, HasMore: len(docs) > limit}
	if page.HasMore {
		page.Agents = docs[:limit]
		if page.NextCursor, err = cursor.Next(a.Cursors, scope, PositionOf(q, docs[limit-1])); err != nil {
			return Page{}, err
		}
	}
	if err := a.withLastCalls(ctx, workspaceID, page.Agents); err != nil {
		return Page{}, err
	}
	return page, nil
}

// Summaries are the workspace's agents agentIDs as the listing shows them
// (the SDK's agents.summaries.get), each read by its id, with its last
// call; missing are the ids of no live agent of the workspace (deleted,
// another workspace's, malformed), each once. Any other failure fails
// them all.
func (a *App) Summaries(ctx context.Context, workspaceID string, agentIDs []string) (found []AgentDoc, missing []string, err error) {
	seen := map[string]bool{}
	for _, id := range agentIDs {
		if seen[id] {
			continue
		}
		seen[id] = true
		ag, _, err := a.Agents.Get(ctx, workspaceID, id)
		switch {
		case errors.Is(err, apperr.AgentNotFound):
			missing = append(missing, id)
		case err != nil:
			return nil, nil, err
		default:
			found = append(found, DocOf(ag))
		}
	}
	return found, missing, a.withLastCalls(ctx, workspaceID, found)
}
