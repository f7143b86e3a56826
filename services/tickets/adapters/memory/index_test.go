package memory

import (
	"context"
	"sync"
	"testing"

	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/app/readmodeltest"
)

// The memory index passes the suite the store's read model passes (in
// package adapters).
func TestIndexConforms(t *testing.T) {
	readmodeltest.Run(t, 600, func(*testing.T) app.ReadModel { return NewIndex() })
}

// An index without search lists answers searches by testing each ticket.
func TestIndexWithoutSearchConforms(t *testing.T) {
	readmodeltest.Run(t, 600, func(*testing.T) app.ReadModel { return NewIndex(WithoutSearch()) })
}

// A loading index given the suite's tickets (new ones, changes, stale
// redeliveries, deletions) lists them at Loaded exactly as an index that
// listed each at once, and goes on live after.
func TestLoadingIndexConforms(t *testing.T) {
	readmodeltest.Run(t, 600, func(*testing.T) app.ReadModel { return &loadedOnFirstRead{Index: NewLoadingIndex()} })
}

// loadedOnFirstRead is a loading index whose replay ends at its first read.
type loadedOnFirstRead struct {
	*Index
	once sync.Once
}

func (l *loadedOnFirstRead) loaded() {
	l.once.Do(func() {
		if err := l.Loaded(); err != nil {
			panic(err)
		}
	})
}

func (l *loadedOnFirstRead) Page(ctx context.Context, q app.Query) ([]*ticketsv1.Ticket, bool, error) {
	l.loaded()
	return l.Index.Page(ctx, q)
}

func (l *loadedOnFirstRead) ActiveTicket(ctx context.Context, workspaceID, agentID, conversationID string) (string, error) {
	l.loaded()
	return l.Index.ActiveTicket(ctx, workspaceID, agentID, conversationID)
}
