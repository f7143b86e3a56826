package app

import "context"

// Directory is what tickets know of other services, learnt from their
// events: which agents exist, who can be assigned, which agent held a
// conversation.
type Directory interface {
	AgentExists(workspaceID, agentID string) bool
	// AgentDeleted reports an agent seen deleted: its tickets leave the
	// listings. (An agent not seen yet, created a moment ago, is not.)
	AgentDeleted(agentID string) bool
	Member(workspaceID, userID string) (Member, bool)
	Members(workspaceID string) []Member
	Conversation(workspaceID, conversationID string) (Conversation, bool)
	// AwaitConversations returns once the directory holds every
	// conversation event of the workspace stored before the call (or ctx
	// ends): a conversation ingested a moment ago, answered 202 but not
	// yet learnt, is then found.
	AwaitConversations(ctx context.Context, workspaceID string) error
}

// Member is a workspace member a ticket can be assigned to.
type Member struct {
	UserID           string
	Name             string
	Email            string
	IsServiceAccount bool
	Locked           bool // its account is locked in the workspace: no ticket is assigned to it
}

// Conversation is what tickets know of a conversation: its agent and when
// it was seen.
type Conversation struct {
	AgentID   string
	StartedAt int64 // unix seconds; 0 = unknown
	EndedAt   int64
}
