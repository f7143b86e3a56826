package app

import (
	"context"
	"errors"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/principal"
)

// ConversationRemoval is how a conversation leaves the event streams.
type ConversationRemoval interface {
	// Shred destroys the key its transcript is sealed under, so every
	// copy in the streams becomes unreadable; shredding again is fine.
	Shred(ctx context.Context, workspaceID, conversationID string) error
	// RecordDeleted records the deletion, made by the command by, on the
	// stream the conversation came from: every replica, projection and
	// replay learns it there.
	RecordDeleted(ctx context.Context, workspaceID, conversationID string, at time.Time, by Deleter) error
}

// Deleter is the command a deletion was made by: the command id of the
// keyed request that asked for it and that request's fingerprint (zero
// for a request without an Idempotency-Key).
type Deleter struct{ CommandID, RequestDigest string }

// DeletionMark is what a keyed deletion leaves under its command id: the
// conversation it deleted and the fingerprint of the request, so that the
// request sent again is answered as the first was, and the key sent with
// another is refused.
type DeletionMark struct{ WorkspaceID, ConversationID, RequestDigest string }

// Mark is the mark d leaves on deleting the workspace's conversation.
func (d Deleter) Mark(workspaceID, conversationID string) DeletionMark {
	return DeletionMark{WorkspaceID: workspaceID, ConversationID: conversationID, RequestDigest: d.RequestDigest}
}

// DeletionMarks keeps the keyed deletions' marks, by command id.
type DeletionMarks interface {
	DeletedBy(commandID string) (DeletionMark, bool)
	// MarkDeleted keeps a mark at once, before the deletion's record
	// comes back from the stream: a retry right after the answer finds
	// it.
	MarkDeleted(commandID string, mark DeletionMark)
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
	// Marks keeps the keyed deletions' marks (nil: a keyed delete sent
	// again is not told from a second delete).
	Marks DeletionMarks
}

// DeleteConversation deletes a conversation of the caller's workspace
// for good: its transcript's key is destroyed, the deletion recorded, and
// every read model drops it. Another workspace's conversation, an unknown
// one or one already deleted is apperr.ConversationUnknown, but for the
// keyed request that deleted it, sent again: that is answered as it was
// the first time (and the key sent with another request is
// apperr.IdempotencyKeyReused). A delete interrupted after the key's
// destruction completes when retried.
func (a *App) DeleteConversation(ctx context.Context, c principal.Caller, conversationID string) error {
	d := a.Deletion
	if c.CommandID != "" && d.Marks != nil {
		if first, ok := d.Marks.DeletedBy(c.CommandID); ok {
			if first.WorkspaceID != c.WorkspaceID || first.ConversationID != conversationID {
				return apperr.IdempotencyKeyReused
			}
			return esproto.SameDigest(ctx, first.RequestDigest)
		}
	}
	if _, err := a.seenConversation(ctx, c.WorkspaceID, conversationID); err != nil {
		return err
	}
	if d.Removal == nil {
		return errors.New("conversation deletion is not configured")
	}
	if err := d.Removal.Shred(ctx, c.WorkspaceID, conversationID); err != nil {
		return err
	}
	by := Deleter{CommandID: c.CommandID, RequestDigest: esproto.RequestDigest(ctx)}
	if err := d.Removal.RecordDeleted(ctx, c.WorkspaceID, conversationID, a.Now(), by); err != nil {
		return err
	}
	if by.CommandID != "" && d.Marks != nil {
		d.Marks.MarkDeleted(by.CommandID, by.Mark(c.WorkspaceID, conversationID))
	}
	for _, rm := range d.ReadModels {
		if err := rm.ForgetConversation(ctx, c.WorkspaceID, conversationID); err != nil {
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
