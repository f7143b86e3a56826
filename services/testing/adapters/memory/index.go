package memory

import (
	"context"
	"math"
	"sync"

	"github.com/google/btree"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// Index is the read model in memory, fed from the TESTING stream
// (each aggregate's last event at start, then live) and by the service's
// own writes. Every listing walks an ordered index from its keyset
// position and stops at a page of matches, so a page costs the page (plus
// what residual filters skip), not the workspace.
type Index struct {
	mu      sync.RWMutex
	spaces  map[string]*space
	running map[string]*invocation // workspace/invocation id → running invocation
}

// space is one workspace's indexes.
type space struct {
	entries     map[string]*entry                  // id → newest version, deleted ones included
	entryOrders map[orderKey]*btree.BTreeG[*entry] // see orderKey
	invocations map[string]*invocation
	invAll      *btree.BTreeG[*invocation]
	invByAgent  map[string]*btree.BTreeG[*invocation]
	invByTest   map[string]*btree.BTreeG[*invocation]
	running     map[string]*invocation // id → running invocation
}

// orderKey names one ordered set of a workspace's live entries: those in
// one parent folder (or anywhere), of one kind (or both). Each live entry
// is in the four sets its parent and kind select.
type orderKey struct {
	parent   string // anyParent: every folder
	anywhere bool
	kind     string // "": both kinds
}

type entry struct {
	seq uint64
	doc app.Entry
}

type invocation struct {
	seq uint64
	doc app.InvocationSummary
}

// Listings are newest first; position fields never change once created.
func entryLess(a, b *entry) bool {
	return a.doc.PositionOf().Compare(b.doc.PositionOf(), false) > 0
}

func invocationLess(a, b *invocation) bool {
	return a.doc.PositionOf().Compare(b.doc.PositionOf()) > 0
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{spaces: map[string]*space{}, running: map[string]*invocation{}}
}

// Reset empties the index: its stream was made anew (a restore).
func (m *Index) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.spaces, m.running = map[string]*space{}, map[string]*invocation{}
}

func (m *Index) space(ws string) *space {
	s := m.spaces[ws]
	if s == nil {
		s = &space{entries: map[string]*entry{}, entryOrders: map[orderKey]*btree.BTreeG[*entry]{},
			invocations: map[string]*invocation{}, invAll: btree.NewG(32, invocationLess),
			invByAgent: map[string]*btree.BTreeG[*invocation]{}, invByTest: map[string]*btree.BTreeG[*invocation]{},
			running: map[string]*invocation{}}
		m.spaces[ws] = s
	}
	return s
}

// ApplyTest records a test as of seq.
func (m *Index) ApplyTest(_ context.Context, seq uint64, t *testingv1.Test) error {
	m.putEntry(seq, app.TestEntry(t))
	return nil
}

// ApplyFolder records a folder as of seq.
func (m *Index) ApplyFolder(_ context.Context, seq uint64, f *testingv1.Folder) error {
	m.putEntry(seq, app.FolderEntry(f))
	return nil
}

func (m *Index) putEntry(seq uint64, d app.Entry) {
	d.Seq = int64(seq)
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.space(d.WorkspaceID)
	cur := s.entries[d.ID]
	if cur != nil && cur.seq >= seq {
		return
	}
	if cur != nil && !cur.doc.Deleted {
		s.eachOrder(cur.doc, func(t *btree.BTreeG[*entry]) { t.Delete(cur) })
	}
	e := &entry{seq: seq, doc: d}
	s.entries[d.ID] = e
	if !d.Deleted {
		s.eachOrder(d, func(t *btree.BTreeG[*entry]) { t.ReplaceOrInsert(e) })
	}
}

// eachOrder calls fn with every ordered set d belongs in, making them.
func (s *space) eachOrder(d app.Entry, fn func(*btree.BTreeG[*entry])) {
	for _, k := range []orderKey{{anywhere: true}, {anywhere: true, kind: d.Kind}, {parent: d.ParentFolderID}, {parent: d.ParentFolderID, kind: d.Kind}} {
		t := s.entryOrders[k]
		if t == nil {
			t = btree.NewG(32, entryLess)
			s.entryOrders[k] = t
		}
		fn(t)
	}
}

// ApplyInvocation records an invocation as of seq. Its position, agent
// and tests never change, so it joins its ordered sets once.
func (m *Index) ApplyInvocation(_ context.Context, seq uint64, inv *testingv1.Invocation) error {
	d := app.SummaryOf(inv)
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.space(d.WorkspaceID)
	cur := s.invocations[d.ID]
	switch {
	case cur != nil && cur.seq >= seq:
		return nil
	case cur != nil:
		cur.seq, cur.doc = seq, d
	default:
		cur = &invocation{seq: seq, doc: d}
		s.invocations[d.ID] = cur
		s.invAll.ReplaceOrInsert(cur)
		joinOrder(s.invByAgent, d.AgentID, cur)
		for _, id := range d.TestIDs {
			joinOrder(s.invByTest, id, cur)
		}
	}
	if key := d.WorkspaceID + "/" + d.ID; d.Status == domain.InvocationRunning {
		m.running[key], s.running[d.ID] = cur, cur
	} else {
		delete(m.running, key)
		delete(s.running, d.ID)
	}
	return nil
}

func joinOrder(orders map[string]*btree.BTreeG[*invocation], key string, inv *invocation) {
	t := orders[key]
	if t == nil {
		t = btree.NewG(32, invocationLess)
		orders[key] = t
	}
	t.ReplaceOrInsert(inv)
}

// Entries returns the live entries among ids.
func (m *Index) Entries(_ context.Context, ws string, ids []string) (map[string]app.Entry, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make(map[string]app.Entry, len(ids))
	s := m.spaces[ws]
	if s == nil {
		return out, nil
	}
	for _, id := range ids {
		if e := s.entries[id]; e != nil && !e.doc.Deleted {
			out[id] = e.doc
		}
	}
	return out, nil
}

// ChildCount is the size of the folder's ordered set.
func (m *Index) ChildCount(_ context.Context, ws, folderID string) (int, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if s := m.spaces[ws]; s != nil {
		if t := s.entryOrders[orderKey{parent: folderID}]; t != nil {
			return t.Len(), nil
		}
	}
	return 0, nil
}

// PageEntries walks the ordered set the query's parent and kinds select
// (folders-first walks the folders' set, then the tests'), from the
// keyset position, until a page and one more match.
func (m *Index) PageEntries(_ context.Context, q app.EntryQuery) ([]app.Entry, bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s := m.spaces[q.WorkspaceID]
	if s == nil || q.Limit <= 0 || (!q.Folders && !q.Tests) {
		return nil, false, nil
	}
	key := orderKey{anywhere: q.Parent == nil}
	if q.Parent != nil {
		key.parent = *q.Parent
	}
	var kinds []string
	switch {
	case q.Folders && q.Tests && !q.FoldersFirst:
		kinds = []string{""}
	case q.Folders && q.Tests:
		kinds = []string{app.KindFolder, app.KindTest}
	case q.Folders:
		kinds = []string{app.KindFolder}
	default:
		kinds = []string{app.KindTest}
	}
	var out []app.Entry
	for _, kind := range kinds {
		key.kind = kind
		t := s.entryOrders[key]
		if t == nil {
			continue
		}
		visit := func(e *entry) bool {
			if q.Matches(e.doc) {
				out = append(out, e.doc)
			}
			return len(out) <= q.Limit
		}
		if q.After == nil || (q.FoldersFirst && q.After.Folder && kind == app.KindTest) {
			t.Ascend(visit)
		} else if !(q.FoldersFirst && !q.After.Folder && kind == app.KindFolder) {
			// Entries at or after the position; Matches drops the position itself.
			t.AscendGreaterOrEqual(&entry{doc: app.Entry{ID: q.After.ID, CreatedAtUnix: q.After.Created, CreatedAtUnixNanos: q.After.CreatedNanos}}, visit)
		}
		if len(out) > q.Limit {
			break
		}
	}
	if len(out) > q.Limit {
		return out[:q.Limit], true, nil
	}
	return out, false, nil
}

// PageInvocations walks the newest-first set of the workspace, agent or
// test, from the keyset position or the end of the time range, and stops
// at a page and one more match, or at the start of the time range.
func (m *Index) PageInvocations(_ context.Context, q app.InvocationFilter) ([]app.InvocationSummary, bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s := m.spaces[q.WorkspaceID]
	if s == nil || q.Limit <= 0 {
		return nil, false, nil
	}
	t := s.invAll
	switch {
	case q.TestID != "":
		t = s.invByTest[q.TestID]
	case q.AgentID != "":
		t = s.invByAgent[q.AgentID]
	}
	if t == nil {
		return nil, false, nil
	}
	from := &invocation{doc: app.InvocationSummary{CreatedAtUnix: math.MaxInt64}}
	if q.EndTime != nil {
		// Before every invocation created in that second.
		from.doc.CreatedAtUnix, from.doc.CreatedAtUnixNanos = *q.EndTime, math.MaxInt64
	}
	if q.After != nil && (q.EndTime == nil || q.After.Created <= *q.EndTime) {
		from.doc.CreatedAtUnix, from.doc.CreatedAtUnixNanos, from.doc.ID = q.After.Created, q.After.CreatedNanos, q.After.ID
	}
	var out []app.InvocationSummary
	t.AscendGreaterOrEqual(from, func(inv *invocation) bool {
		if q.StartTime != nil && inv.doc.CreatedAtUnix < *q.StartTime {
			return false
		}
		if q.Matches(inv.doc) {
			out = append(out, inv.doc)
		}
		return len(out) <= q.Limit
	})
	if len(out) > q.Limit {
		return out[:q.Limit], true, nil
	}
	return out, false, nil
}

// Running is every running invocation.
func (m *Index) Running(context.Context) ([]app.InvocationSummary, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]app.InvocationSummary, 0, len(m.running))
	for _, inv := range m.running {
		out = append(out, inv.doc)
	}
	return out, nil
}

// Active is up to limit of the workspace's running invocations.
func (m *Index) Active(_ context.Context, ws string, limit int) ([]app.InvocationSummary, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s := m.spaces[ws]
	if s == nil || limit <= 0 {
		return nil, nil
	}
	out := make([]app.InvocationSummary, 0, min(limit, len(s.running)))
	for _, inv := range s.running {
		if len(out) == limit {
			break
		}
		out = append(out, inv.doc)
	}
	return out, nil
}
