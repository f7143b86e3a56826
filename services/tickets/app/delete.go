package app

import (
	"context"
	"errors"
	"time"
)

// ConversationRemoval is how a conversation leaves the event streams.
type ConversationRemoval interface {
	// Shred destroys the key its transcript is sealed under, so every
	// copy in the streams becomes unreadable; shredding again is fine.
	Shred(ctx context.Context, workspaceID, conversationID string) error
	// RecordDeleted records the deletion on the stream the conversation
	// came from: every replica, projection and replay learns it there.
	RecordDeleted(ctx context.Context, workspaceID, conversationID string, at time.Time) error
}

// ConversationForgetter is a read model holding conversations: it drops a
// deleted one at once, before its projector hears of the deletion.
type ConversationForgetter interface {
	ForgetConversation(ctx context.Context, workspaceID, conversationID string) error
}

// ConversationDeletion is what deleting a conversation runs on.
type ConversationDeletion struct {
	Removal    ConversationRemoval
	ReadModels []ConversationForgetter
	// Deleted reports whether a conversation was deleted, for the
	// tickets and tests that name it.
	Deleted func(workspaceID, conversationID string) bool
}

// DeleteConversation deletes a conversation of the workspace for good:
// its transcript's key is destroyed, the deletion recorded, and every
// read model drops it. Another workspace's conversation, an unknown one
// or one already deleted is apperr.ConversationUnknown. A delete
// interrupted after the key's destruction completes when retried.
func (a *App) DeleteConversation(ctx context.Context, workspaceID, conversationID string) error {
	if _, err := a.seenConversation(ctx, workspaceID, conversationID); err != nil {
		return err
	}
	d := a.Deletion
	if d.Removal == nil {
		return errors.New("conversation deletion is not configured")
	}
	if err := d.Removal.Shred(ctx, workspaceID, conversationID); err != nil {
		return err
	}
	if err := d.Removal.RecordDeleted(ctx, workspaceID, conversationID, a.Now()); err != nil {
		return err
	}
	for _, rm := range d.ReadModels {
		if err := rm.ForgetConversation(ctx, workspaceID, conversationID); err != nil {
			return err
		}
	}
	return nil
}

// ConversationDeleted reports whether the workspace's conversation was
// deleted (false when nothing says so).
func (a *App) ConversationDeleted(workspaceID, conversationID string) bool {
	return a.Deletion.Deleted != nil && a.Deletion.Deleted(workspaceID, conversationID)
}
