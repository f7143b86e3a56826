package adapters

import (
	"context"
	"sync"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// Mirror is the read model in memory: the listed form of every test,
// folder and invocation, per workspace, and which invocations ran each
// test. It is fed from the TESTING stream (each aggregate's last event at
// start, then live) and by the service's own writes, so no request reads
// the store (the embedded store reads every document of a filtered
// query). Listings still filter and order a workspace's documents in
// memory: fast at tens of thousands, not yet paged by an index.
type Mirror struct {
	mu          sync.RWMutex
	entries     map[string]map[string]version[EntryDoc]      // workspace → id
	invocations map[string]map[string]version[InvocationDoc] // workspace → id
	ranTest     map[string]map[string]map[string]bool        // workspace → test id → invocation ids
}

// version is a document as of a stream sequence; live is false once the
// aggregate is deleted (the sequence still guards against older events).
type version[D any] struct {
	seq  uint64
	doc  D
	live bool
}

// NewMirror returns an empty mirror.
func NewMirror() *Mirror {
	return &Mirror{entries: map[string]map[string]version[EntryDoc]{}, invocations: map[string]map[string]version[InvocationDoc]{},
		ranTest: map[string]map[string]map[string]bool{}}
}

// put stores doc in m[ws][id] unless a newer or equal version is there.
func put[D any](m map[string]map[string]version[D], ws, id string, seq uint64, doc D, live bool) bool {
	byID := m[ws]
	if byID == nil {
		byID = map[string]version[D]{}
		m[ws] = byID
	}
	if cur, ok := byID[id]; ok && cur.seq >= seq {
		return false
	}
	byID[id] = version[D]{seq: seq, doc: doc, live: live}
	return true
}

// ApplyTest records a test as of seq.
func (m *Mirror) ApplyTest(_ context.Context, seq uint64, t *testingv1.Test) error {
	m.putEntry(seq, TestDoc(t))
	return nil
}

// ApplyFolder records a folder as of seq.
func (m *Mirror) ApplyFolder(_ context.Context, seq uint64, f *testingv1.Folder) error {
	m.putEntry(seq, FolderDoc(f))
	return nil
}

func (m *Mirror) putEntry(seq uint64, d EntryDoc) {
	d.Seq = int64(seq) // run-tests reads a test's definition at this sequence
	m.mu.Lock()
	defer m.mu.Unlock()
	put(m.entries, d.WorkspaceID, d.ID, seq, d, !d.Deleted)
}

// ApplyInvocation records an invocation as of seq, and the tests it runs.
func (m *Mirror) ApplyInvocation(_ context.Context, seq uint64, inv *testingv1.Invocation) error {
	d := InvDoc(inv)
	var tests InvocationTestsDoc
	creation := inv.GetStatus() == domain.InvocationRunning && len(inv.GetResubmissions()) == 0
	if creation {
		tests = InvTestsDoc(inv)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !put(m.invocations, d.WorkspaceID, d.ID, seq, d, true) || !creation {
		return nil
	}
	byTest := m.ranTest[d.WorkspaceID]
	if byTest == nil {
		byTest = map[string]map[string]bool{}
		m.ranTest[d.WorkspaceID] = byTest
	}
	for _, id := range tests.TestIDs {
		if byTest[id] == nil {
			byTest[id] = map[string]bool{}
		}
		byTest[id][d.ID] = true
	}
	return nil
}

// EntriesOf is every live test and folder of a workspace.
func (m *Mirror) EntriesOf(_ context.Context, workspaceID string) ([]EntryDoc, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]EntryDoc, 0, len(m.entries[workspaceID]))
	for _, v := range m.entries[workspaceID] {
		if v.live {
			out = append(out, v.doc)
		}
	}
	return out, nil
}

// InvocationsOf is every invocation of a workspace.
func (m *Mirror) InvocationsOf(_ context.Context, workspaceID string) ([]InvocationDoc, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]InvocationDoc, 0, len(m.invocations[workspaceID]))
	for _, v := range m.invocations[workspaceID] {
		out = append(out, v.doc)
	}
	return out, nil
}

// InvocationsWithTest is the ids of the invocations that ran testID.
func (m *Mirror) InvocationsWithTest(_ context.Context, workspaceID, testID string) (map[string]bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make(map[string]bool, len(m.ranTest[workspaceID][testID]))
	for id := range m.ranTest[workspaceID][testID] {
		out[id] = true
	}
	return out, nil
}

// Running is every running invocation.
func (m *Mirror) Running(context.Context) ([]InvocationDoc, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []InvocationDoc
	for _, byID := range m.invocations {
		for _, v := range byID {
			if v.doc.Status == domain.InvocationRunning {
				out = append(out, v.doc)
			}
		}
	}
	return out, nil
}
