package app

import (
	"context"
	"slices"
	"sort"
	"strings"

	"github.com/voiceai-platform/voiceai/services/testing/adapters"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// entryIndex is a workspace's tests and folders, indexed for listing.
type entryIndex struct {
	byID     map[string]adapters.EntryDoc
	children map[string][]adapters.EntryDoc // by parent folder id ("" = root)
}

func (a *App) entries(ctx context.Context, ws string) (*entryIndex, error) {
	docs, err := a.ReadModel.EntriesOf(ctx, ws)
	if err != nil {
		return nil, err
	}
	ix := &entryIndex{byID: map[string]adapters.EntryDoc{}, children: map[string][]adapters.EntryDoc{}}
	for _, d := range docs {
		ix.byID[d.ID] = d
	}
	for _, d := range docs {
		parent := d.ParentFolderID
		if _, ok := ix.byID[parent]; !ok {
			parent = "" // a parent deleted meanwhile: show at the root
		}
		ix.children[parent] = append(ix.children[parent], d)
	}
	return ix, nil
}

// path is the folders from the root down to id, id included.
func (ix *entryIndex) path(id string) []map[string]any {
	var out []map[string]any
	for cur, n := id, 0; cur != "" && n < 100; n++ {
		d, ok := ix.byID[cur]
		if !ok {
			break
		}
		out = append(out, map[string]any{"id": d.ID, "name": d.Name})
		cur = d.ParentFolderID
	}
	slices.Reverse(out)
	if out == nil {
		out = []map[string]any{}
	}
	return out
}

// isWithin reports whether folder id is folder ancestor or below it.
func (ix *entryIndex) isWithin(id, ancestor string) bool {
	for cur, n := id, 0; cur != "" && n < 100; n++ {
		if cur == ancestor {
			return true
		}
		cur = ix.byID[cur].ParentFolderID
	}
	return false
}

// EntryView is a test or folder in listings (UnitTestSummaryResponseModel).
type EntryView = map[string]any

func (ix *entryIndex) view(d adapters.EntryDoc) EntryView {
	v := EntryView{
		"id": d.ID, "name": d.Name, "created_at_unix_secs": d.CreatedAtUnix, "last_updated_at_unix_secs": d.UpdatedAtUnix,
		"type": d.Type, "entity_type": d.Kind, "folder_parent_id": nullable(d.ParentFolderID),
		"folder_path": ix.path(d.ParentFolderID),
	}
	if d.Kind == "folder" {
		v["children_count"] = len(ix.children[d.ID])
	} else if d.InitSource != "" {
		v["conversation_initiation_source"] = d.InitSource
	}
	return v
}

// TestQuery is a listing request.
type TestQuery struct {
	WorkspaceID   string
	Search        string
	ParentFolder  *string // nil: everywhere; "root" or "": the root
	Types         []string
	FoldersFirst  bool
	CreatedBy     string
	AfterCreated  int64
	AfterID       string
	HasAfter      bool
	Limit         int
	IncludeFolder bool
}

// ListTests returns one page of tests (and folders when asked), newest
// first, and whether more follow.
func (a *App) ListTests(ctx context.Context, q TestQuery) ([]EntryView, []adapters.EntryDoc, bool, error) {
	ix, err := a.entries(ctx, q.WorkspaceID)
	if err != nil {
		return nil, nil, false, err
	}
	search := strings.ToLower(q.Search)
	var docs []adapters.EntryDoc
	for _, d := range ix.byID {
		if d.Kind == "folder" && !q.IncludeFolder && !slices.Contains(q.Types, domain.TypeFolder) {
			continue
		}
		if len(q.Types) > 0 && !slices.Contains(q.Types, d.Type) {
			continue
		}
		if q.ParentFolder != nil {
			want := *q.ParentFolder
			if want == "root" {
				want = ""
			}
			if d.ParentFolderID != want {
				continue
			}
		}
		if search != "" && !strings.Contains(strings.ToLower(d.Name), search) {
			continue
		}
		if q.CreatedBy != "" && d.CreatedBy != q.CreatedBy {
			continue
		}
		docs = append(docs, d)
	}
	less := func(x, y adapters.EntryDoc) bool {
		if q.FoldersFirst && (x.Kind == "folder") != (y.Kind == "folder") {
			return x.Kind == "folder"
		}
		if x.CreatedAtUnix != y.CreatedAtUnix {
			return x.CreatedAtUnix > y.CreatedAtUnix
		}
		return x.ID > y.ID
	}
	sort.Slice(docs, func(i, j int) bool { return less(docs[i], docs[j]) })
	start := 0
	if q.HasAfter {
		start = len(docs)
		for i, d := range docs {
			if d.ID == q.AfterID {
				start = i + 1
				break
			}
			if less(adapters.EntryDoc{ID: q.AfterID, CreatedAtUnix: q.AfterCreated, Kind: d.Kind}, d) {
				start = i
				break
			}
		}
	}
	end := min(start+q.Limit, len(docs))
	page := docs[start:end]
	views := make([]EntryView, len(page))
	for i, d := range page {
		views[i] = ix.view(d)
	}
	return views, page, end < len(docs), nil
}
