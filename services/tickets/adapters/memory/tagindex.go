package memory

import (
	"context"
	"sync"

	"github.com/google/btree"

	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// TagIndex is app.Tags: every conversation tag in memory, per workspace
// in listing order (app.TagPosition), fed from stream TICKETS and the
// service's own writes. Tags are few: a workspace's whole set is small.
type TagIndex struct {
	mu     sync.RWMutex
	seq    map[string]uint64 // tag id → last sequence applied
	tags   map[string]*ticketsv1.ConversationTag
	gone   map[string]bool // workspace/tag deleted
	spaces map[string]*btree.BTreeG[*ticketsv1.ConversationTag]
}

// NewTagIndex returns an empty index.
func NewTagIndex() *TagIndex {
	return &TagIndex{seq: map[string]uint64{}, tags: map[string]*ticketsv1.ConversationTag{}, gone: map[string]bool{}, spaces: map[string]*btree.BTreeG[*ticketsv1.ConversationTag]{}}
}

func newestTagFirst(a, b *ticketsv1.ConversationTag) bool {
	return app.PositionOfTag(a).Compare(app.PositionOfTag(b)) < 0
}

// Put records t as of seq; an older or equal seq is ignored.
func (x *TagIndex) Put(_ context.Context, seq uint64, t *ticketsv1.ConversationTag) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if seq <= x.seq[t.TagId] {
		return nil
	}
	x.seq[t.TagId] = seq
	space := x.spaces[t.WorkspaceId]
	if space == nil {
		space = btree.NewG(16, newestTagFirst)
		x.spaces[t.WorkspaceId] = space
	}
	if prev := x.tags[t.TagId]; prev != nil {
		space.Delete(prev)
		delete(x.tags, t.TagId)
	}
	if t.DeletedAtUnixSecs == nil {
		x.tags[t.TagId] = t
		space.ReplaceOrInsert(t)
	} else {
		x.gone[t.WorkspaceId+"/"+t.TagId] = true
	}
	return nil
}

// Deleted reports whether the workspace's tag is known deleted (a tag
// this replica has not heard of yet is not).
func (x *TagIndex) Deleted(workspaceID, tagID string) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.gone[workspaceID+"/"+tagID]
}

// Tag is a live tag of the workspace.
func (x *TagIndex) Tag(workspaceID, tagID string) (*ticketsv1.ConversationTag, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	t, ok := x.tags[tagID]
	if !ok || t.WorkspaceId != workspaceID {
		return nil, false
	}
	return t, true
}

// TagPage is up to limit tags of the workspace, newest first, after the
// position after (nil: from the newest).
func (x *TagIndex) TagPage(workspaceID string, after *app.TagPosition, limit int) ([]*ticketsv1.ConversationTag, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	space := x.spaces[workspaceID]
	if space == nil {
		return nil, false
	}
	var page []*ticketsv1.ConversationTag
	more := false
	visit := func(t *ticketsv1.ConversationTag) bool {
		if after != nil && app.PositionOfTag(t) == *after {
			return true // the cursor's own tag
		}
		if len(page) == limit {
			more = true
			return false
		}
		page = append(page, t)
		return true
	}
	if after == nil {
		space.Ascend(visit)
	} else {
		space.AscendGreaterOrEqual(&ticketsv1.ConversationTag{TagId: after.ID, CreatedAtUnixSecs: after.CreatedAt}, visit) // from the cursor: older
	}
	return page, more
}
