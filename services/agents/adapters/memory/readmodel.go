package memory

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/google/btree"

	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"

	"github.com/voiceai-platform/voiceai/services/agents/app"
)

// ReadModel is the agent listing kept in memory: the read index of the
// embedded default (VOICEAI_READ_INDEX=memory, fed from the AGENTS
// stream), where the store cannot index, and the use-case tests' double.
// Each workspace keeps its live agents in two ordered sets, by creation
// and by name: a page walks one from its cursor and stops at a page of
// matches, so it costs the page (plus what the search and filters skip),
// not the workspace, let alone every workspace.
type ReadModel struct {
	mu     sync.RWMutex
	agents map[string]*agent // id → newest version, deleted ones included
	spaces map[string]*agentSpace
}

type agent struct {
	seq uint64
	doc app.AgentDoc
}

// agentSpace is one workspace's live agents, ordered, and by the
// secrets their configurations use.
type agentSpace struct {
	byCreated *btree.BTreeG[*agent]
	byName    *btree.BTreeG[*agent]
	using     map[string]map[string]*agent // secret id → agent id → agent
}

// Both orders end on the id, so no two agents are equal.
func createdOrder(a, b *agent) int {
	return app.CompareCreated(a.doc, b.doc)
}

func nameOrder(a, b *agent) int {
	return cmp.Or(strings.Compare(a.doc.NameLower, b.doc.NameLower), strings.Compare(a.doc.ID, b.doc.ID))
}

func less(order func(a, b *agent) int) btree.LessFunc[*agent] {
	return func(a, b *agent) bool { return order(a, b) < 0 }
}

// NewReadModel is an empty listing.
func NewReadModel() *ReadModel {
	return &ReadModel{agents: map[string]*agent{}, spaces: map[string]*agentSpace{}}
}

var _ app.ReadModel = (*ReadModel)(nil)

// Reset empties the listing: its stream was made anew (a restore).
func (m *ReadModel) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.agents, m.spaces = map[string]*agent{}, map[string]*agentSpace{}
}

// Apply implements app.ReadModel.
func (m *ReadModel) Apply(_ context.Context, seq uint64, a *agentsv1.Agent) error {
	next := &agent{seq: seq, doc: app.DocOf(a)}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := m.agents[next.doc.ID]
	if cur != nil && cur.seq >= seq {
		return nil
	}
	m.agents[next.doc.ID] = next
	if cur != nil && !cur.doc.Deleted {
		m.spaceOf(cur.doc.WorkspaceID).remove(cur)
	}
	if !next.doc.Deleted {
		m.spaceOf(next.doc.WorkspaceID).add(next)
	}
	return nil
}

func (m *ReadModel) spaceOf(ws string) *agentSpace {
	s := m.spaces[ws]
	if s == nil {
		s = &agentSpace{byCreated: btree.NewG(32, less(createdOrder)), byName: btree.NewG(32, less(nameOrder)), using: map[string]map[string]*agent{}}
		m.spaces[ws] = s
	}
	return s
}

func (s *agentSpace) add(a *agent) {
	s.byCreated.ReplaceOrInsert(a)
	s.byName.ReplaceOrInsert(a)
	for _, secret := range a.doc.SecretIDs {
		if s.using[secret] == nil {
			s.using[secret] = map[string]*agent{}
		}
		s.using[secret][a.doc.ID] = a
	}
}

func (s *agentSpace) remove(a *agent) {
	s.byCreated.Delete(a)
	s.byName.Delete(a)
	for _, secret := range a.doc.SecretIDs {
		delete(s.using[secret], a.doc.ID)
		if len(s.using[secret]) == 0 {
			delete(s.using, secret)
		}
	}
}

// List implements app.ReadModel with the MongoDB listing's meaning: a
// case-insensitive substring search on the name, any of the tags.
func (m *ReadModel) List(_ context.Context, q app.Query) ([]app.AgentDoc, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s := m.spaces[q.WorkspaceID]
	if s == nil || q.Limit <= 0 {
		return nil, nil
	}
	tree, order := s.byCreated, createdOrder
	if q.SortBy == "name" {
		tree, order = s.byName, nameOrder
	}
	search := strings.ToLower(q.Search)
	var out []app.AgentDoc
	visit := func(a *agent) bool {
		if q.After != nil && order(a, after(q.After)) == 0 {
			return true // the cursor's own agent: the page starts after it
		}
		if matches(a.doc, q, search) {
			out = append(out, a.doc)
		}
		return len(out) < q.Limit
	}
	switch {
	case q.After == nil && q.Descending:
		tree.Descend(visit)
	case q.After == nil:
		tree.Ascend(visit)
	case q.Descending:
		tree.DescendLessOrEqual(after(q.After), visit)
	default:
		tree.AscendGreaterOrEqual(after(q.After), visit)
	}
	return out, nil
}

// after is a cursor's position as an agent to compare with.
func after(p *app.Position) *agent {
	return &agent{doc: app.AgentDoc{ID: p.ID, CreatedAtUnix: p.Created, CreatedAtUnixNanos: p.CreatedNanos, NameLower: p.Name}}
}

func matches(d app.AgentDoc, q app.Query, search string) bool {
	switch {
	case search != "" && !strings.Contains(d.NameLower, search),
		len(q.Tags) > 0 && !slices.ContainsFunc(q.Tags, func(t string) bool { return slices.Contains(d.Tags, t) }),
		q.Archived != nil && d.Archived != *q.Archived,
		q.CreatedBy != "" && d.CreatedBy != q.CreatedBy:
		return false
	}
	return true
}

// usingSecret returns up to limit live agents of the workspace that use
// secretID, by id.
func (m *ReadModel) usingSecret(workspaceID, secretID string, limit int) []app.AgentDoc {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s := m.spaces[workspaceID]
	if s == nil {
		return nil
	}
	out := make([]app.AgentDoc, 0, len(s.using[secretID]))
	for _, a := range s.using[secretID] {
		out = append(out, a.doc)
	}
	slices.SortFunc(out, func(a, b app.AgentDoc) int { return strings.Compare(a.ID, b.ID) })
	return out[:min(len(out), limit)]
}

// Secrets is the secret listing kept in memory, beside the agents of a
// ReadModel (for the agents that use a secret): each workspace's live
// secrets ordered by name, so a page walks from its prefix or cursor.
type Secrets struct {
	Agents *ReadModel

	mu      sync.RWMutex
	secrets map[string]*secret // id → newest version, deleted ones included
	spaces  map[string]*btree.BTreeG[*secret]
}

type secret struct {
	seq uint64
	doc app.SecretDoc
}

func secretLess(a, b *secret) bool {
	return cmp.Or(strings.Compare(a.doc.NameLower, b.doc.NameLower), strings.Compare(a.doc.ID, b.doc.ID)) < 0
}

// NewSecrets is an empty secret listing over agents.
func NewSecrets(agents *ReadModel) *Secrets {
	return &Secrets{Agents: agents, secrets: map[string]*secret{}, spaces: map[string]*btree.BTreeG[*secret]{}}
}

var _ app.SecretReadModel = (*Secrets)(nil)

// Reset empties the listing: its stream was made anew (a restore).
func (s *Secrets) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.secrets, s.spaces = map[string]*secret{}, map[string]*btree.BTreeG[*secret]{}
}

// Apply implements app.SecretReadModel.
func (m *Secrets) Apply(_ context.Context, seq uint64, s *agentsv1.WorkspaceSecret) error {
	next := &secret{seq: seq, doc: app.SecretDocOf(s)}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := m.secrets[next.doc.ID]
	if cur != nil && cur.seq >= seq {
		return nil
	}
	m.secrets[next.doc.ID] = next
	if cur != nil && !cur.doc.Deleted {
		m.spaces[cur.doc.WorkspaceID].Delete(cur)
	}
	if !next.doc.Deleted {
		space := m.spaces[next.doc.WorkspaceID]
		if space == nil {
			space = btree.NewG(16, secretLess)
			m.spaces[next.doc.WorkspaceID] = space
		}
		space.ReplaceOrInsert(next)
	}
	return nil
}

// ListSecrets implements app.SecretReadModel: the workspace's secrets
// whose names start with prefix (any case), by name, after after.
func (m *Secrets) ListSecrets(_ context.Context, workspaceID, prefix string, after *app.SecretPosition, limit int) ([]app.SecretDoc, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	space := m.spaces[workspaceID]
	if space == nil || limit <= 0 {
		return nil, nil
	}
	prefix = strings.ToLower(prefix)
	from := &secret{doc: app.SecretDoc{NameLower: prefix}}
	if after != nil && after.Name >= prefix {
		from = &secret{doc: app.SecretDoc{NameLower: after.Name, ID: after.ID}}
	}
	var out []app.SecretDoc
	space.AscendGreaterOrEqual(from, func(s *secret) bool {
		if !strings.HasPrefix(s.doc.NameLower, prefix) {
			return false // past the names with the prefix
		}
		if after == nil || s.doc.NameLower > after.Name || s.doc.NameLower == after.Name && s.doc.ID > after.ID {
			out = append(out, s.doc)
		}
		return len(out) < limit
	})
	return out, nil
}

// AgentsUsing implements app.SecretReadModel.
func (m *Secrets) AgentsUsing(_ context.Context, workspaceID, secretID string, limit int) ([]app.AgentDoc, error) {
	return m.Agents.usingSecret(workspaceID, secretID, limit), nil
}
