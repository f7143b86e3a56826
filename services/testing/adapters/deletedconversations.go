package adapters

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/tick"
	"github.com/voiceai-platform/voiceai/pkg/wire"
)

// DeletedConversations are the conversations deleted through the
// tickets service (its conversation_deleted records on PLATFORM), kept
// in memory so a test made from one says so.
type DeletedConversations struct {
	mu  sync.RWMutex
	set map[string]bool // workspace/conversation
}

// NewDeletedConversations is an empty set.
func NewDeletedConversations() *DeletedConversations {
	return &DeletedConversations{set: map[string]bool{}}
}

// Follow keeps the set from PLATFORM in the background (the stream may
// be made later, by the service that first needs it). A follower that
// could not start (an error the stream wait does not retry) is started
// again, replaying the set from the start: adding is idempotent.
func (d *DeletedConversations) Follow(ctx context.Context, js jetstream.JetStream, log *slog.Logger) {
	go tick.Restarting.Restart(ctx, func(ctx context.Context) error {
		if _, err := eventstore.Follow(ctx, js, events.PlatformStream, []string{convseal.DeletedFilter}, false, d.apply); err != nil {
			return err
		}
		<-ctx.Done() // the follower heals by itself from here
		return nil
	}, func(err error, again time.Duration) {
		log.Error("deleted conversations not followed, until started again: tests made from them meanwhile will not say so", "err", err, "after", again)
	})
}

func (d *DeletedConversations) apply(rec eventstore.Record) {
	ws, _, ok := events.ParsePlatformSubject(rec.Subject)
	var env wire.Envelope
	var data struct {
		ConversationID string `json:"conversation_id"`
	}
	if !ok || json.Unmarshal(rec.Data, &env) != nil || json.Unmarshal(env.Data, &data) != nil || data.ConversationID == "" {
		return
	}
	d.Add(ws, data.ConversationID)
}

// Add records a deletion.
func (d *DeletedConversations) Add(workspaceID, conversationID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.set[workspaceID+"/"+conversationID] = true
}

// Deleted reports whether the conversation was deleted.
func (d *DeletedConversations) Deleted(workspaceID, conversationID string) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.set[workspaceID+"/"+conversationID]
}
