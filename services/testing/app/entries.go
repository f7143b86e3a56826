package app

import (
	"context"
	"slices"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// maxFolderDepth bounds walks up the folder tree (a cycle two moves at
// once wrote before the folder tree ordered them must not loop).
const maxFolderDepth = 100

// folders resolves folder ancestry for one request: each folder is read
// once, and each level of ancestors in one read.
type folders struct {
	rm    ReadModel
	ws    string
	known map[string]Entry // every entry read so far, by id
	asked map[string]bool  // ids read, found or not
}

func (a *App) folders(ws string) *folders {
	return &folders{rm: a.ReadModel, ws: ws, known: map[string]Entry{}, asked: map[string]bool{}}
}

// load reads the entries among ids not read yet, then their parents, level
// by level.
func (f *folders) load(ctx context.Context, ids ...string) error {
	for depth := 0; depth < maxFolderDepth; depth++ {
		var want []string
		for _, id := range ids {
			if id != "" && !f.asked[id] && !slices.Contains(want, id) {
				want = append(want, id)
			}
		}
		if len(want) == 0 {
			return nil
		}
		got, err := f.rm.Entries(ctx, f.ws, want)
		if err != nil {
			return err
		}
		ids = ids[:0]
		for _, id := range want {
			f.asked[id] = true
			if e, ok := got[id]; ok {
				f.known[id] = e
				ids = append(ids, e.ParentFolderID)
			}
		}
	}
	return nil
}

// FolderRef names a folder on a path.
type FolderRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// path is the folders from the root down to id, id included (load id first).
func (f *folders) path(id string) []FolderRef {
	out := []FolderRef{}
	for cur, n := id, 0; cur != "" && n < maxFolderDepth; n++ {
		e, ok := f.known[cur]
		if !ok {
			break
		}
		out = append(out, FolderRef{ID: e.ID, Name: e.Name})
		cur = e.ParentFolderID
	}
	slices.Reverse(out)
	return out
}

// ListedEntry is a test or folder as listings show it: the entry, the
// folders above it, and a folder's children count.
type ListedEntry struct {
	Entry
	FolderPath    []FolderRef // root first
	ChildrenCount int         // folders only
}

// listed gives entries their folder paths and, for folders, their
// children counts: a read per level of folders and one count per folder
// shown, whatever the workspace holds.
func (a *App) listed(ctx context.Context, ws string, entries []Entry) ([]ListedEntry, error) {
	f := a.folders(ws)
	parents := make([]string, len(entries))
	for i, e := range entries {
		parents[i] = e.ParentFolderID
	}
	if err := f.load(ctx, parents...); err != nil {
		return nil, err
	}
	out := make([]ListedEntry, len(entries))
	for i, e := range entries {
		out[i] = ListedEntry{Entry: e, FolderPath: f.path(e.ParentFolderID)}
		if e.Kind == KindFolder {
			n, err := a.ReadModel.ChildCount(ctx, ws, e.ID)
			if err != nil {
				return nil, err
			}
			out[i].ChildrenCount = n
		}
	}
	return out, nil
}

// TestQuery is a listing request.
type TestQuery struct {
	WorkspaceID   string
	Search        string
	ParentFolder  *string // nil: everywhere; "root" or "": the root
	Types         []string
	FoldersFirst  bool
	CreatedBy     string
	NotCreatedBy  string // sharing_mode shared_with_me: not the caller's own
	After         *EntryPosition
	Limit         int
	IncludeFolder bool
}

// entryQuery is what the read model is asked for q. Folders are listed
// when asked for, or when "folder" is among the types; tests unless the
// types name only folders.
func (q TestQuery) entryQuery() EntryQuery {
	eq := EntryQuery{WorkspaceID: q.WorkspaceID, Search: q.Search, CreatedBy: q.CreatedBy, NotCreatedBy: q.NotCreatedBy, FoldersFirst: q.FoldersFirst,
		After: q.After, Limit: q.Limit}
	if q.ParentFolder != nil {
		p := *q.ParentFolder
		if p == "root" {
			p = ""
		}
		eq.Parent = &p
	}
	for _, t := range q.Types {
		if t != domain.TypeFolder {
			eq.TestTypes = append(eq.TestTypes, t)
		}
	}
	eq.Folders = slices.Contains(q.Types, domain.TypeFolder) || (len(q.Types) == 0 && q.IncludeFolder)
	eq.Tests = len(q.Types) == 0 || len(eq.TestTypes) > 0
	return eq
}

// ListTests returns one page of tests (and folders when asked), newest
// first, and whether more follow.
func (a *App) ListTests(ctx context.Context, q TestQuery) ([]ListedEntry, []Entry, bool, error) {
	page, more, err := a.ReadModel.PageEntries(ctx, q.entryQuery())
	if err != nil {
		return nil, nil, false, err
	}
	listed, err := a.listed(ctx, q.WorkspaceID, page)
	return listed, page, more, err
}
