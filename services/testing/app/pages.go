package app

import (
	"context"
	"strconv"
	"strings"

	"github.com/voiceai-platform/voiceai/pkg/cursor"
)

// Page is one page of a listing: its rows, whether more follow, and the
// cursor of the next page (nil on the last).
type Page[T any] struct {
	Rows       []T
	HasMore    bool
	NextCursor *string
}

// pagePosition is a cursor's content: where the last page ended.
type pagePosition struct {
	Created      int64  `json:"c"`
	CreatedNanos int64  `json:"n,omitempty"` // the nanosecond (none in a token made before it was kept)
	ID           string `json:"i"`
	Folder       bool   `json:"f,omitempty"` // the entry was a folder (folders_first orders by it)
}

// PageTests is the page of the tests listing q that token names ("": the
// first). A token is bound to the listing's filters.
func (a *App) PageTests(ctx context.Context, q TestQuery, token string) (Page[ListedEntry], error) {
	parent, sortMode := "", ""
	if q.ParentFolder != nil {
		parent = *q.ParentFolder
	}
	if q.FoldersFirst {
		sortMode = "folders_first"
	}
	parts := []string{"tests", q.WorkspaceID, q.Search, strings.Join(q.Types, ","), parent, sortMode, q.CreatedBy,
		strconv.FormatBool(q.IncludeFolder)}
	if q.NotCreatedBy != "" { // only then: the cursors of listings without it stay valid
		parts = append(parts, "not:"+q.NotCreatedBy)
	}
	scope := cursor.Scope(parts...)
	pos, err := cursor.After[pagePosition](a.Cursors, scope, token)
	if err != nil {
		return Page[ListedEntry]{}, err
	}
	if pos != nil {
		q.After = &EntryPosition{Folder: pos.Folder, Created: pos.Created, CreatedNanos: pos.CreatedNanos, ID: pos.ID}
	}
	listed, entries, more, err := a.ListTests(ctx, q)
	if err != nil {
		return Page[ListedEntry]{}, err
	}
	page := Page[ListedEntry]{Rows: listed, HasMore: more}
	if more && len(entries) > 0 {
		at := entries[len(entries)-1].PositionOf()
		page.NextCursor, err = cursor.Next(a.Cursors, scope, pagePosition{Created: at.Created, CreatedNanos: at.CreatedNanos, ID: at.ID, Folder: at.Folder})
	}
	return page, err
}

// PageInvocations is the page of the invocations listing q that token
// names ("": the first). A token is bound to the listing's filters.
func (a *App) PageInvocations(ctx context.Context, q InvocationFilter, token string) (Page[InvocationProgress], error) {
	scope := cursor.Scope("invocations", q.WorkspaceID, q.AgentID, q.BranchID, q.TestID, q.Search, timeParam(q.StartTime), timeParam(q.EndTime))
	pos, err := cursor.After[pagePosition](a.Cursors, scope, token)
	if err != nil {
		return Page[InvocationProgress]{}, err
	}
	if pos != nil {
		q.After = &InvocationPosition{Created: pos.Created, CreatedNanos: pos.CreatedNanos, ID: pos.ID}
	}
	rows, at, more, err := a.ListInvocations(ctx, q)
	if err != nil {
		return Page[InvocationProgress]{}, err
	}
	page := Page[InvocationProgress]{Rows: rows, HasMore: more}
	if more && at != nil {
		page.NextCursor, err = cursor.Next(a.Cursors, scope, pagePosition{Created: at.Created, CreatedNanos: at.CreatedNanos, ID: at.ID})
	}
	return page, err
}

// timeParam is a time bound as it was given, for a cursor's scope.
func timeParam(t *int64) string {
	if t == nil {
		return ""
	}
	return strconv.FormatInt(*t, 10)
}
