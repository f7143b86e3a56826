package memory

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"

	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"

	"github.com/voiceai-platform/voiceai/services/agents/app"
)

// ReadModel is the agent listing kept in memory, for the use-case
// tests and tools that run without a store. A page sorts the workspace's
// matching agents: fine for a test's dozens, not for a service's
// thousands, which MongoDB's indexes serve.
type ReadModel struct {
	docs newest[app.AgentDoc] // by agent id
}

// newest keeps each document's newest version by id, as a store's
// projection does: a version at or below the one held is ignored. It is
// safe for concurrent use.
type newest[D any] struct {
	mu   sync.Mutex
	docs map[string]versioned[D]
}

type versioned[D any] struct {
	seq uint64
	doc D
}

// put records doc as id's at seq, unless a version as new is held.
func (n *newest[D]) put(id string, seq uint64, doc D) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if cur, ok := n.docs[id]; ok && cur.seq >= seq {
		return
	}
	if n.docs == nil {
		n.docs = map[string]versioned[D]{}
	}
	n.docs[id] = versioned[D]{seq: seq, doc: doc}
}

// matching is every document held that keep accepts, in no order.
func (n *newest[D]) matching(keep func(D) bool) []D {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []D
	for _, v := range n.docs {
		if keep(v.doc) {
			out = append(out, v.doc)
		}
	}
	return out
}

// NewReadModel is an empty listing.
func NewReadModel() *ReadModel { return &ReadModel{} }

var _ app.ReadModel = (*ReadModel)(nil)

// Apply implements app.ReadModel.
func (m *ReadModel) Apply(_ context.Context, seq uint64, a *agentsv1.Agent) error {
	m.docs.put(a.GetAgentId(), seq, app.DocOf(a))
	return nil
}

// List implements app.ReadModel with the MongoDB listing's meaning: a
// case-insensitive substring search on the name, any of the tags.
func (m *ReadModel) List(_ context.Context, q app.Query) ([]app.AgentDoc, error) {
	out := m.docs.matching(func(d app.AgentDoc) bool { return d.WorkspaceID == q.WorkspaceID && !d.Deleted && matches(d, q) })
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

// Secrets is the secret listing kept in memory, beside the agents
// of a ReadModel (for the agents that use a secret).
type Secrets struct {
	Agents *ReadModel

	docs newest[app.SecretDoc] // by secret id
}

// NewSecrets is an empty secret listing over agents.
func NewSecrets(agents *ReadModel) *Secrets {
	return &Secrets{Agents: agents}
}

var _ app.SecretReadModel = (*Secrets)(nil)

// Apply implements app.SecretReadModel.
func (m *Secrets) Apply(_ context.Context, seq uint64, s *agentsv1.WorkspaceSecret) error {
	m.docs.put(s.GetSecretId(), seq, app.SecretDocOf(s))
	return nil
}

// ListSecrets implements app.SecretReadModel.
func (m *Secrets) ListSecrets(_ context.Context, workspaceID, prefix string, after *app.SecretPosition, limit int) ([]app.SecretDoc, error) {
	out := m.docs.matching(func(d app.SecretDoc) bool {
		return d.WorkspaceID == workspaceID && !d.Deleted && strings.HasPrefix(d.NameLower, strings.ToLower(prefix)) &&
			(after == nil || d.NameLower > after.Name || d.NameLower == after.Name && d.ID > after.ID)
	})
	slices.SortFunc(out, func(a, b app.SecretDoc) int {
		return cmp.Or(strings.Compare(a.NameLower, b.NameLower), strings.Compare(a.ID, b.ID))
	})
	return out[:min(len(out), limit)], nil
}

// AgentsUsing implements app.SecretReadModel.
func (m *Secrets) AgentsUsing(_ context.Context, workspaceID, secretID string, limit int) ([]app.AgentDoc, error) {
	out := m.Agents.docs.matching(func(d app.AgentDoc) bool {
		return d.WorkspaceID == workspaceID && !d.Deleted && slices.Contains(d.SecretIDs, secretID)
	})
	slices.SortFunc(out, func(a, b app.AgentDoc) int { return strings.Compare(a.ID, b.ID) })
	return out[:min(len(out), limit)], nil
}
