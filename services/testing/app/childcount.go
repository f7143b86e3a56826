package app

import (
	"errors"

	"google.golang.org/protobuf/proto"

	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/aggregate"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
)

// A folder counts what it holds (Folder.child_count): every command that
// puts a test or folder in or takes one out stores, with its own event,
// the change of each folder's count in one atomic batch. So a deletion
// that finds a folder empty was stored on a version no create or move
// into it had changed, and a create or move into a folder deleted since
// it checked fails on that folder's version rather than leaving a test
// in no folder.

// countStep is the step that changes folder's count by delta, as a
// command (commandID) moving something in or out stores it: none for the
// root, nor for a folder made before counting (it is left as it was). A
// folder gaining a child must be live; one losing a child may be gone.
func (a *App) countStep(ws, folder, commandID string, delta int64) (*aggregate.Step, error) {
	if folder == "" || delta == 0 {
		return nil, nil
	}
	step := a.Folders.StepIfExists
	if delta > 0 {
		step = a.Folders.Step
	}
	return step(ws, folder, aggregate.CommandFor(commandID, folder), func(f *testingv1.Folder, meta *commonv1.EventMeta) (proto.Message, error) {
		if !countChild(f, delta) {
			return nil, nil
		}
		return &testingv1.FolderUpdated{Meta: meta, Folder: f}, nil
	})
}

// countChild adds delta to f's count, where f counts (false where not,
// or delta is 0: nothing changed).
func countChild(f *testingv1.Folder, delta int64) bool {
	if f.ChildCount == nil || delta == 0 {
		return false
	}
	f.ChildCount = proto.Int64(max(0, f.GetChildCount()+delta))
	return true
}

// countSteps is the steps of countStep for each folder's delta, the
// non-nil ones.
func (a *App) countSteps(ws, commandID string, deltas map[string]int64) ([]*aggregate.Step, error) {
	var steps []*aggregate.Step
	for folder, delta := range deltas {
		step, err := a.countStep(ws, folder, commandID, delta)
		if err != nil {
			return nil, err
		}
		if step != nil {
			steps = append(steps, step)
		}
	}
	return steps, nil
}

// folderGone turns a folder's NotFound from a step into the 422 a
// request naming a folder that is not there gets (folderMissing).
func folderGone(err error, folder, field string) error {
	if errors.Is(err, apperr.FolderNotFound) {
		return folderMissing(folder, field)
	}
	return err
}

// folderMissing is the 422 at body.<field> naming a folder that is not
// there.
func folderMissing(folder, field string) error {
	return apperr.ValidationErrors{{Loc: []any{"body", field}, Msg: "Folder " + folder + " not found", Type: "value_error"}}
}
