package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"
	"google.golang.org/protobuf/proto"

	"github.com/voiceai-platform/voiceai/pkg/aggregate"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/ids"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// ParseTest decodes and validates a test body: 400 for malformed JSON,
// 422 with loc for wrong types and rule violations.
func ParseTest(body []byte) (domain.TestInput, map[string]json.RawMessage, error) {
	var in domain.TestInput
	if err := apperr.DecodeJSON(body, &in); err != nil {
		return in, nil, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return in, nil, apperr.NotJSONObject
	}
	var v apperr.Validator
	in.Validate(&v)
	v.BoundStrings(body, domain.MaxTextLen, "body")
	return in, raw, v.Err()
}

// CreateTest stores a new test.
func (a *App) CreateTest(ctx context.Context, c principal.Caller, body []byte) (*testingv1.Test, error) {
	if t, ok, err := createdBefore(ctx, a.Tests, c, testKeyedID(c)); err != nil || ok {
		return t, err
	}
	in, raw, err := ParseTest(body)
	if err != nil {
		return nil, err
	}
	parent := deref(in.ParentFolderID)
	if err := a.checkFolder(ctx, c.WorkspaceID, parent, "parent_folder_id"); err != nil {
		return nil, err
	}
	return a.createTest(ctx, c, in, raw)
}

// testKeyedID is the id of the test a create keyed by c's command id makes.
func testKeyedID(c principal.Caller) string { return keyedID("test", "test", c) }

// createTest stores a parsed test whose folder is checked; with an
// Idempotency-Key its id is stable, so a retry stores nothing new.
func (a *App) createTest(ctx context.Context, c principal.Caller, in domain.TestInput, raw map[string]json.RawMessage) (*testingv1.Test, error) {
	parent := deref(in.ParentFolderID)
	if parent == "root" {
		parent = "" // the root, as listings and bulk-move spell it
	}
	now := a.Now()
	t := &testingv1.Test{
		TestId: ids.New("test"), WorkspaceId: c.WorkspaceID, Name: *in.Name, Type: *in.Type, ParentFolderId: parent,
		DefinitionJson: domain.Definition(raw), CreatedByUserId: c.UserID, CreatedByEmail: c.Email, CreatedByName: c.Name,
		CreatedAtUnix: now.Unix(), CreatedAtUnixNanos: now.UnixNano(), UpdatedAtUnix: now.Unix(),
	}
	if id := testKeyedID(c); id != "" {
		t.TestId = id
	}
	return createIn(ctx, a, a.Tests, c, t.TestId, parent, t, func(meta *commonv1.EventMeta) proto.Message {
		return &testingv1.TestCreated{Meta: meta, Test: t}
	})
}

// createIn stores the creation of state (its id; event, its event) in
// folder parent, with the folder's count (childcount.go): a folder
// deleted since it was checked is the 422 at parent_folder_id.
func createIn[S proto.Message](ctx context.Context, a *App, repo *aggregate.Repo[S], c principal.Caller, id, parent string, state S,
	event func(meta *commonv1.EventMeta) proto.Message) (S, error) {
	meta := esproto.Meta(ctx, c.WorkspaceID, c.CommandID, a.Now())
	count, err := a.countStep(c.WorkspaceID, parent, c.CommandID, +1)
	if err != nil {
		var none S
		return none, err
	}
	out, _, err := repo.CreateWith(ctx, c.WorkspaceID, id, meta, event(meta), state, steps(count))
	return out, folderGone(err, parent, "parent_folder_id")
}

// steps is the non-nil ones of steps.
func steps(steps ...*aggregate.Step) []*aggregate.Step {
	var out []*aggregate.Step
	for _, s := range steps {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}

// UpdateTest replaces a test's definition (PUT: the full object).
func (a *App) UpdateTest(ctx context.Context, c principal.Caller, testID string, body []byte) (*testingv1.Test, error) {
	in, raw, err := ParseTest(body)
	if err != nil {
		return nil, err
	}
	parent := deref(in.ParentFolderID)
	if parent == "root" {
		parent = "" // the root, as a create stores it
	}
	if in.ParentFolderID != nil {
		if err := a.checkFolder(ctx, c.WorkspaceID, parent, "parent_folder_id"); err != nil {
			return nil, err
		}
	}
	var from string // the folder the test leaves, on this attempt
	t, err := a.Tests.UpdateWith(ctx, c.WorkspaceID, testID, c.CommandID, func(t *testingv1.Test, meta *commonv1.EventMeta) (proto.Message, error) {
		t.Name, t.Type, t.DefinitionJson = *in.Name, *in.Type, domain.Definition(raw)
		from = t.ParentFolderId
		if in.ParentFolderID != nil {
			t.ParentFolderId = parent
		}
		return &testingv1.TestUpdated{Meta: meta, Test: t}, nil
	}, func(t *testingv1.Test) ([]*aggregate.Step, error) {
		if t.ParentFolderId == from {
			return nil, nil
		}
		return a.countSteps(c.WorkspaceID, c.CommandID, map[string]int64{from: -1, t.ParentFolderId: +1})
	})
	return t, folderGone(err, parent, "parent_folder_id")
}

// DeleteTest deletes a test; invocations that ran it keep their pinned
// version.
func (a *App) DeleteTest(ctx context.Context, c principal.Caller, testID string) error {
	_, err := a.Tests.UpdateWith(ctx, c.WorkspaceID, testID, c.CommandID, func(t *testingv1.Test, meta *commonv1.EventMeta) (proto.Message, error) {
		now := a.Now().Unix()
		t.DeletedAtUnix = &now
		return &testingv1.TestDeleted{Meta: meta, Test: t}, nil
	}, func(t *testingv1.Test) ([]*aggregate.Step, error) {
		step, err := a.countStep(c.WorkspaceID, t.ParentFolderId, c.CommandID, -1)
		return steps(step), err
	})
	return err
}

// checkFolder answers 422 at body.<field> when folderID (an id, as the
// schema says) is not a folder of the workspace ("" and "root" are the
// root).
func (a *App) checkFolder(ctx context.Context, ws, folderID, field string) error {
	if folderID == "" || folderID == "root" {
		return nil
	}
	if _, _, err := a.Folders.Get(ctx, ws, folderID); err != nil {
		if isNotFound(err) {
			return folderMissing(folderID, field)
		}
		return err
	}
	return nil
}

func isNotFound(err error) bool {
	e, ok := err.(*apperr.Error)
	return ok && e.Kind == apperr.NotFound
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Summaries returns the listed form of each test id (at most 1000 ids,
// as the schema, TestSummariesRequest, says); a repeated or unknown id →
// 422 naming each.
func (a *App) Summaries(ctx context.Context, ws string, testIDs []string) (map[string]ListedEntry, error) {
	var v apperr.Validator
	seen := map[string]bool{}
	for i, id := range testIDs {
		v.Check(!seen[id], "Duplicate test id "+id, "value_error", "body", "test_ids", i)
		seen[id] = true
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	entries, err := a.ReadModel.Entries(ctx, ws, testIDs)
	if err != nil {
		return nil, err
	}
	var found []Entry
	for i, id := range testIDs {
		if e, ok := entries[id]; ok && e.Kind == KindTest {
			found = append(found, e)
		} else {
			v.Add("Test "+id+" not found", "value_error", "body", "test_ids", i)
		}
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	listed, err := a.listed(ctx, ws, found)
	if err != nil {
		return nil, err
	}
	out := make(map[string]ListedEntry, len(found))
	for i, e := range found {
		out[e.ID] = listed[i]
	}
	return out, nil
}

// CreateFolder creates a folder.
func (a *App) CreateFolder(ctx context.Context, c principal.Caller, name, parent string) (*testingv1.Folder, error) {
	keyed := keyedID("tfld", "tfld", c)
	if f, ok, err := createdBefore(ctx, a.Folders, c, keyed); err != nil || ok {
		return f, err
	}
	if parent == "root" {
		parent = ""
	}
	if err := a.checkFolder(ctx, c.WorkspaceID, parent, "parent_folder_id"); err != nil {
		return nil, err
	}
	now := a.Now()
	f := &testingv1.Folder{FolderId: ids.New("tfld"), WorkspaceId: c.WorkspaceID, Name: name, ParentFolderId: parent,
		CreatedByUserId: c.UserID, CreatedAtUnix: now.Unix(), CreatedAtUnixNanos: now.UnixNano(), UpdatedAtUnix: now.Unix(),
		ChildCount: proto.Int64(0)}
	if keyed != "" {
		f.FolderId = keyed
	}
	return createIn(ctx, a, a.Folders, c, f.FolderId, parent, f, func(meta *commonv1.EventMeta) proto.Message {
		return &testingv1.FolderCreated{Meta: meta, Folder: f}
	})
}

// RenameFolder renames a folder.
func (a *App) RenameFolder(ctx context.Context, c principal.Caller, id, name string) (*testingv1.Folder, error) {
	return a.Folders.Update(ctx, c.WorkspaceID, id, c.CommandID, func(f *testingv1.Folder, meta *commonv1.EventMeta) (proto.Message, error) {
		if f.Name == name {
			return nil, nil
		}
		f.Name = name
		return &testingv1.FolderUpdated{Meta: meta, Folder: f}, nil
	})
}

// DeleteFolder deletes a folder; one with children needs force, which
// deletes everything under it. With a command id each deletion carries
// its own derived from it, and a replay of a deletion done answers as it
// did.
//
// A folder that counts its children (childcount.go) is deleted only on a
// version that holds none: without force, one holding any is refused;
// with force, the children listed are deleted first, and those the
// listing did not have yet (a create on another replica, not yet
// projected here; one racing this deletion) are looked for again.
func (a *App) DeleteFolder(ctx context.Context, c principal.Caller, id string, force bool) error {
	f, _, err := a.Folders.Get(ctx, c.WorkspaceID, id)
	if err != nil {
		if _, _, replay, rerr := a.Folders.Recorded(ctx, c.WorkspaceID, id, c.CommandID); isNotFound(err) && rerr == nil && replay {
			return nil
		}
		return err
	}
	if f.ChildCount != nil && !force {
		err := a.deleteEmptyFolder(ctx, c, id)
		var left childrenLeft
		if errors.As(err, &left) {
			err = apperr.FolderNotEmpty(int(left))
		}
		return err
	}
	err = eventlog.Retry(ctx, childrenAttempts, func() error {
		if err := a.deleteChildren(ctx, c, id, force); err != nil {
			return err
		}
		var left childrenLeft
		if err := a.deleteEmptyFolder(ctx, c, id); !errors.As(err, &left) {
			return err
		}
		return eventlog.ErrConflict // the listing missed some: list again
	})
	if errors.Is(err, eventlog.ErrConflict) {
		return apperr.ConcurrentUpdate
	}
	return err
}

// childrenAttempts bounds how often a forced deletion lists a folder's
// children again when its count says the listing missed some.
const childrenAttempts = 8

// childrenLeft is deleteEmptyFolder's finding that the folder still
// counts children: so many.
type childrenLeft int64

func (n childrenLeft) Error() string {
	return fmt.Sprintf("the folder still holds %d children", int64(n))
}

// deleteChildren deletes what the read model lists in folder id: a
// deletion without force of a folder that does not count its children
// refuses any (409).
func (a *App) deleteChildren(ctx context.Context, c principal.Caller, id string, force bool) error {
	children, err := a.children(ctx, c.WorkspaceID, id)
	if err != nil {
		return err
	}
	if len(children) > 0 && !force {
		return apperr.FolderNotEmpty(len(children))
	}
	for _, ch := range children {
		child := c
		child.CommandID = aggregate.CommandFor(c.CommandID, ch.ID)
		if ch.Kind == KindFolder {
			err = a.DeleteFolder(ctx, child, ch.ID, true)
		} else {
			err = a.DeleteTest(ctx, child, ch.ID)
		}
		if err != nil && !isNotFound(err) {
			return err
		}
	}
	return nil
}

// deleteEmptyFolder deletes folder id, with its parent's count, while it
// counts no children (else childrenLeft).
func (a *App) deleteEmptyFolder(ctx context.Context, c principal.Caller, id string) error {
	_, err := a.Folders.UpdateWith(ctx, c.WorkspaceID, id, c.CommandID, func(f *testingv1.Folder, meta *commonv1.EventMeta) (proto.Message, error) {
		if n := f.GetChildCount(); n > 0 {
			return nil, childrenLeft(n)
		}
		now := a.Now().Unix()
		f.DeletedAtUnix = &now
		return &testingv1.FolderDeleted{Meta: meta, Folder: f}, nil
	}, func(f *testingv1.Folder) ([]*aggregate.Step, error) {
		step, err := a.countStep(c.WorkspaceID, f.ParentFolderId, c.CommandID, -1)
		return steps(step), err
	})
	return err
}

// children is every live test and folder directly in a folder.
func (a *App) children(ctx context.Context, ws, folderID string) ([]Entry, error) {
	q := EntryQuery{WorkspaceID: ws, Parent: &folderID, Folders: true, Tests: true, Limit: 500}
	var out []Entry
	for {
		page, more, err := a.ReadModel.PageEntries(ctx, q)
		if err != nil || !more {
			return append(out, page...), err
		}
		out = append(out, page...)
		after := page[len(page)-1].PositionOf()
		q.After = &after
	}
}

// FolderDetails is a folder as GET shows it: the folders down to it (it
// included) and its children count.
type FolderDetails struct {
	Folder        *testingv1.Folder
	FolderPath    []FolderRef // root first, the folder last
	ChildrenCount int
}

// FolderDetails details a folder.
func (a *App) FolderDetails(ctx context.Context, ws string, fl *testingv1.Folder) (FolderDetails, error) {
	f := a.folders(ws)
	if err := f.load(ctx, fl.GetParentFolderId()); err != nil {
		return FolderDetails{}, err
	}
	n, err := a.ReadModel.ChildCount(ctx, ws, fl.GetFolderId())
	if err != nil {
		return FolderDetails{}, err
	}
	path := append(f.path(fl.GetParentFolderId()), FolderRef{ID: fl.GetFolderId(), Name: fl.GetName()})
	return FolderDetails{Folder: fl, FolderPath: path, ChildrenCount: n}, nil
}
