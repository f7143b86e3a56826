package adapters

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"

	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"

	"github.com/voiceai-platform/voiceai/services/agents/app"
)

// MemoryReadModel is the agent listing kept in memory, for the use-case
// tests and tools that run without a store. A page sorts the workspace's
// matching agents: fine for a test's dozens, not for a service's
// thousands, which MongoDB's indexes serve.
type MemoryReadModel struct {
	mu   sync.Mutex
	docs map[string]stored // agent id → its newest state
}

type stored struct {
	seq uint64
	doc app.AgentDoc
}

// NewMemoryReadModel is an empty listing.
func NewMemoryReadModel() *MemoryReadModel { return &MemoryReadModel{docs: map[string]stored{}} }

var _ app.ReadModel = (*MemoryReadModel)(nil)

// Apply implements app.ReadModel.
func (m *MemoryReadModel) Apply(_ context.Context, seq uint64, a *agentsv1.Agent) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.docs[a.GetAgentId()]; ok && cur.seq >= seq {
		return nil
	}
	m.docs[a.GetAgentId()] = stored{seq: seq, doc: app.DocOf(a)}
	return nil
}

// List implements app.ReadModel with the MongoDB listing's meaning: a
// case-insensitive substring search on the name, any of the tags.
func (m *MemoryReadModel) List(_ context.Context, q app.Query) ([]app.AgentDoc, error) {
	m.mu.Lock()
	var out []app.AgentDoc
	for _, s := range m.docs {
		if d := s.doc; d.WorkspaceID == q.WorkspaceID && !d.Deleted && matches(d, q) {
			out = append(out, d)
		}
	}
	m.mu.Unlock()
	order := func(a, b app.AgentDoc) int {
		c := cmp.Compare(a.CreatedAtUnix, b.CreatedAtUnix)
		if q.SortBy == "name" {
			c = strings.Compare(a.NameLower, b.NameLower)
		}
		if c == 0 {
			c = strings.Compare(a.ID, b.ID)
		}
		if q.Descending {
			return -c
		}
		return c
	}
	slices.SortFunc(out, order)
	if q.After != nil {
		after := app.AgentDoc{ID: q.After.ID, CreatedAtUnix: q.After.Created, NameLower: q.After.Name}
		i, _ := slices.BinarySearchFunc(out, after, order)
		for i < len(out) && order(out[i], after) <= 0 {
			i++
		}
		out = out[i:]
	}
	return out[:min(len(out), q.Limit)], nil
}

func matches(d app.AgentDoc, q app.Query) bool {
	switch {
	case q.Search != "" && !strings.Contains(strings.ToLower(d.Name), strings.ToLower(q.Search)),
		len(q.Tags) > 0 && !slices.ContainsFunc(q.Tags, func(t string) bool { return slices.Contains(d.Tags, t) }),
		q.Archived != nil && d.Archived != *q.Archived,
		q.CreatedBy != "" && d.CreatedBy != q.CreatedBy:
		return false
	}
	return true
}

// MemorySecrets is the secret listing kept in memory, beside the agents
// of a MemoryReadModel (for the agents that use a secret).
type MemorySecrets struct {
	Agents *MemoryReadModel

	mu   sync.Mutex
	docs map[string]storedSecret
}

type storedSecret struct {
	seq uint64
	doc app.SecretDoc
}

// NewMemorySecrets is an empty secret listing over agents.
func NewMemorySecrets(agents *MemoryReadModel) *MemorySecrets {
	return &MemorySecrets{Agents: agents, docs: map[string]storedSecret{}}
}

var _ app.SecretReadModel = (*MemorySecrets)(nil)

// Apply implements app.SecretReadModel.
func (m *MemorySecrets) Apply(_ context.Context, seq uint64, s *agentsv1.WorkspaceSecret) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.docs[s.GetSecretId()]; ok && cur.seq >= seq {
		return nil
	}
	m.docs[s.GetSecretId()] = storedSecret{seq: seq, doc: app.SecretDocOf(s)}
	return nil
}

// ListSecrets implements app.SecretReadModel.
func (m *MemorySecrets) ListSecrets(_ context.Context, workspaceID, prefix string, after *app.SecretPosition, limit int) ([]app.SecretDoc, error) {
	m.mu.Lock()
	var out []app.SecretDoc
	for _, s := range m.docs {
		d := s.doc
		if d.WorkspaceID == workspaceID && !d.Deleted && strings.HasPrefix(d.NameLower, strings.ToLower(prefix)) &&
			(after == nil || d.NameLower > after.Name || d.NameLower == after.Name && d.ID > after.ID) {
			out = append(out, d)
		}
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b app.SecretDoc) int {
		return cmp.Or(strings.Compare(a.NameLower, b.NameLower), strings.Compare(a.ID, b.ID))
	})
	return out[:min(len(out), limit)], nil
}

// AgentsUsing implements app.SecretReadModel.
func (m *MemorySecrets) AgentsUsing(_ context.Context, workspaceID, secretID string, limit int) ([]app.AgentDoc, error) {
	m.Agents.mu.Lock()
	var out []app.AgentDoc
	for _, s := range m.Agents.docs {
		if d := s.doc; d.WorkspaceID == workspaceID && !d.Deleted && slices.Contains(d.SecretIDs, secretID) {
			out = append(out, d)
		}
	}
	m.Agents.mu.Unlock()
	slices.SortFunc(out, func(a, b app.AgentDoc) int { return strings.Compare(a.ID, b.ID) })
	return out[:min(len(out), limit)], nil
}
