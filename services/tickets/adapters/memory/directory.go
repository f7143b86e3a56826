package memory

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// Directory is app.Directory in memory: what tickets know of agents,
// members and conversations, told by the caller (the use-case tests), or
// by the stream followers of adapters.Directory, which keeps its agents
// and members here.
type Directory struct {
	mu            sync.RWMutex
	agents        map[string]string                // agent_id → workspace_id (live agents only)
	deleted       map[string]bool                  // agents seen deleted
	members       map[string]map[string]app.Member // workspace → user_id → member
	conversations map[[2]string]app.Conversation   // workspace, conversation
}

// NewDirectory is a directory that knows nothing yet.
func NewDirectory() *Directory {
	return &Directory{agents: map[string]string{}, deleted: map[string]bool{}, members: map[string]map[string]app.Member{}, conversations: map[[2]string]app.Conversation{}}
}

var _ app.Directory = (*Directory)(nil)

// PutAgent records a live agent of the workspace.
func (d *Directory) PutAgent(workspaceID, agentID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.agents[agentID] = workspaceID
}

// DeleteAgent records an agent deleted.
func (d *Directory) DeleteAgent(agentID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.agents, agentID)
	d.deleted[agentID] = true
}

// ForgetAgents drops every agent, live or deleted: the stream they came
// from was made anew (a restore), and is read again from its start.
func (d *Directory) ForgetAgents() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.agents, d.deleted = map[string]string{}, map[string]bool{}
}

// ForgetMembers drops every member, as ForgetAgents the agents.
func (d *Directory) ForgetMembers() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.members = map[string]map[string]app.Member{}
}

// PutMember records a workspace member (again: its newest details).
func (d *Directory) PutMember(workspaceID string, m app.Member) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.members[workspaceID] == nil {
		d.members[workspaceID] = map[string]app.Member{}
	}
	d.members[workspaceID][m.UserID] = m
}

// PutConversation records what is known of a conversation.
func (d *Directory) PutConversation(workspaceID, conversationID string, c app.Conversation) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.conversations[[2]string{workspaceID, conversationID}] = c
}

// AgentExists implements app.Directory.
func (d *Directory) AgentExists(workspaceID, agentID string) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	ws, ok := d.agents[agentID]
	return ok && ws == workspaceID
}

// AgentDeleted implements app.Directory.
func (d *Directory) AgentDeleted(agentID string) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.deleted[agentID]
}

// Member implements app.Directory.
func (d *Directory) Member(workspaceID, userID string) (app.Member, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	m, ok := d.members[workspaceID][userID]
	return m, ok
}

// Members implements app.Directory: by user id, never nil.
func (d *Directory) Members(workspaceID string) []app.Member {
	d.mu.RLock()
	defer d.mu.RUnlock()
	out := make([]app.Member, 0, len(d.members[workspaceID]))
	for _, m := range d.members[workspaceID] {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b app.Member) int { return cmp.Compare(a.UserID, b.UserID) })
	return out
}

// AwaitConversations implements app.Directory: what it was told, it
// holds at once.
func (d *Directory) AwaitConversations(context.Context, string) error { return nil }

// Conversation implements app.Directory.
func (d *Directory) Conversation(workspaceID, conversationID string) (app.Conversation, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	c, ok := d.conversations[[2]string{workspaceID, conversationID}]
	return c, ok
}
