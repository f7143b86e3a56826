package app

import (
	"context"
	"errors"
	"slices"

	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/aggregate"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/principal"
)

// errNoMoves is the folder tree of a workspace no folder has moved in.
var errNoMoves = errors.New("no folder has moved in this workspace")

// errTreeMoved is a move's answer when folders moved since it decided.
var errTreeMoved = errors.New("the folder tree moved since the move decided")

// moveAttempts bounds how often a move decides again on a tree that
// other moves keep changing.
const moveAttempts = 8

// BulkMove moves tests and folders (1 to 1000 ids, as the schema,
// BulkMove, says) into a folder ("" and "root" are the root).
//
// The moves are stored together or not at all. Where folders change
// parent, the workspace's folder tree moves on a version with them: the
// move decides that no folder goes inside itself on the folders above
// the target as the event log holds them at that version, and is stored
// only while the tree is still at it; else it decides again. So two moves
// at once (A into B while B goes into A) never put folders inside each
// other: the second finds the first's and is refused.
func (a *App) BulkMove(ctx context.Context, c principal.Caller, entityIDs []string, moveTo string) (int, error) {
	if moveTo == "root" {
		moveTo = ""
	}
	err := eventlog.Retry(ctx, moveAttempts, func() error {
		if err := a.bulkMove(ctx, c, entityIDs, moveTo); !errors.Is(err, errTreeMoved) {
			return err
		}
		return eventlog.ErrConflict
	})
	if errors.Is(err, eventlog.ErrConflict) {
		return 0, apperr.ConcurrentUpdate
	}
	if err != nil {
		return 0, err
	}
	return len(entityIDs), nil
}

// bulkMove is one attempt of BulkMove: errTreeMoved when folders moved
// since it read the tree.
func (a *App) bulkMove(ctx context.Context, c principal.Caller, entityIDs []string, moveTo string) error {
	ws := c.WorkspaceID
	f := a.folders(ws)
	if err := f.load(ctx, append([]string{moveTo}, entityIDs...)...); err != nil {
		return err
	}
	var v apperr.Validator
	target, known := f.known[moveTo]
	if moveTo != "" && (!known || target.Kind != KindFolder) {
		v.Add("Folder "+moveTo+" not found", "value_error", "body", "move_to")
	}
	// Folders are checked against the tree as of its version, read first.
	folders := slices.ContainsFunc(entityIDs, func(id string) bool { return f.known[id].Kind == KindFolder })
	var version uint64
	var above map[string]bool
	if folders {
		tree, _, err := a.Trees.Get(ctx, ws, events.FolderTreeID)
		if err != nil && !errors.Is(err, errNoMoves) {
			return err
		}
		version = tree.GetVersion()
		if moveTo != "" && v.Err() == nil {
			if above, err = a.foldersAbove(ctx, ws, moveTo); err != nil {
				return err
			}
		}
	}
	seen := make(map[string]bool, len(entityIDs))
	for i, id := range entityIDs {
		e, ok := f.known[id]
		switch {
		case seen[id]:
			v.Add("Duplicate id "+id, "value_error", "body", "entity_ids", i)
		case !ok:
			v.Add("Test or folder "+id+" not found", "value_error", "body", "entity_ids", i)
		case e.Kind == KindFolder && above[id]:
			v.Add("A folder cannot move into itself or a subfolder", "value_error", "body", "entity_ids", i)
		}
		seen[id] = true
	}
	if err := v.Err(); err != nil {
		return err
	}
	// The folders' counts (childcount.go) change with the moves, as the
	// read model has each entry's folder; an entry the event log has
	// elsewhere makes the move decide again.
	counts := map[string]int64{}
	for _, id := range entityIDs {
		if from := f.known[id].ParentFolderID; from != moveTo {
			counts[from]--
			counts[moveTo]++
		}
	}
	// Each entry's move carries its own command id derived from the
	// request's: a replay moves nothing again, even to another folder. An
	// entry in place already has no move to replay: sent without one, it
	// is not looked for in its history.
	var moved []string // the folders this attempt's steps move
	steps := make([]*aggregate.Step, 0, len(entityIDs)+len(counts)+1)
	for _, id := range entityIDs {
		cmd := aggregate.CommandFor(c.CommandID, id)
		from := f.known[id].ParentFolderID
		if from == moveTo {
			cmd = ""
		}
		var step *aggregate.Step
		var err error
		if f.known[id].Kind == KindFolder {
			delta := counts[id] // children moving out of a folder that moves too
			delete(counts, id)
			step, err = a.Folders.Step(ws, id, cmd, func(f *testingv1.Folder, meta *commonv1.EventMeta) (proto.Message, error) {
				if f.ParentFolderId != from {
					return nil, errTreeMoved
				}
				counted := countChild(f, delta)
				if f.ParentFolderId == moveTo && !counted {
					return nil, nil
				}
				if f.ParentFolderId != moveTo {
					f.ParentFolderId = moveTo
					moved = append(moved, f.FolderId)
				}
				return &testingv1.FolderUpdated{Meta: meta, Folder: f}, nil
			})
		} else {
			step, err = a.Tests.Step(ws, id, cmd, func(t *testingv1.Test, meta *commonv1.EventMeta) (proto.Message, error) {
				if t.ParentFolderId != from {
					return nil, errTreeMoved
				}
				if t.ParentFolderId == moveTo {
					return nil, nil
				}
				t.ParentFolderId = moveTo
				return &testingv1.TestUpdated{Meta: meta, Test: t}, nil
			})
		}
		if err != nil {
			return err
		}
		steps = append(steps, step)
	}
	countSteps, err := a.countSteps(ws, c.CommandID, counts)
	if err != nil {
		return err
	}
	steps = append(steps, countSteps...)
	if folders {
		// Last, so it sees what the folders' steps decided; it starts the
		// next attempt's list afresh.
		step, err := a.Trees.StepOrMake(ws, events.FolderTreeID, aggregate.CommandFor(c.CommandID, events.FolderTreeID), func(t *testingv1.FolderTree, meta *commonv1.EventMeta) (proto.Message, error) {
			ids := moved
			moved = nil
			switch {
			case t.Version != version:
				return nil, errTreeMoved
			case len(ids) == 0:
				return nil, nil
			}
			t.WorkspaceId, t.Version = ws, version+1
			return &testingv1.FoldersMoved{Meta: meta, Tree: t, FolderIds: ids, ParentFolderId: moveTo}, nil
		})
		if err != nil {
			return err
		}
		steps = append(steps, step)
	}
	err = aggregate.ChangeMany(ctx, a.Tests.Env, ws, steps)
	if isNotFound(err) {
		return a.goneSince(ctx, ws, entityIDs, moveTo, err)
	}
	return err
}

// goneSince is the 422 a move answers when what it checked was deleted
// before it was stored: the target at move_to, or the entries at their
// index in entity_ids, as the move refuses what is not there when it
// checks; err when none is gone.
func (a *App) goneSince(ctx context.Context, ws string, entityIDs []string, moveTo string, err error) error {
	if moveTo != "" {
		if _, _, gerr := a.Folders.Get(ctx, ws, moveTo); isNotFound(gerr) {
			return folderGone(err, moveTo, "move_to")
		}
	}
	var v apperr.Validator
	for i, id := range entityIDs {
		_, _, terr := a.Tests.Get(ctx, ws, id)
		_, _, ferr := a.Folders.Get(ctx, ws, id)
		if isNotFound(terr) && isNotFound(ferr) {
			v.Add("Test or folder "+id+" not found", "value_error", "body", "entity_ids", i)
		}
	}
	if v.Err() != nil {
		return v.Err()
	}
	return err
}

// foldersAbove is folder id and every folder above it, as the event log
// holds them: the read model may not have another replica's moves yet.
func (a *App) foldersAbove(ctx context.Context, ws, id string) (map[string]bool, error) {
	above := map[string]bool{}
	for cur := id; cur != "" && !above[cur] && len(above) < maxFolderDepth; {
		f, _, err := a.Folders.Get(ctx, ws, cur)
		switch {
		case isNotFound(err) && cur == id:
			return nil, apperr.ValidationErrors{{Loc: []any{"body", "move_to"}, Msg: "Folder " + id + " not found", Type: "value_error"}}
		case isNotFound(err):
			return above, nil // above a deleted folder: nothing more
		case err != nil:
			return nil, err
		}
		above[cur] = true
		cur = f.ParentFolderId
	}
	return above, nil
}
