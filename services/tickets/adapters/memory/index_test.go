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

// The dense copy of ids orders them as strings do: prefixes first, and
// ids longer than it by their entries.
func TestDenseIDsOrderAsStrings(t *testing.T) {
	ids := []string{"", "a", "ab", "tkt_01", "tkt_01m8jqgc17mph3bqs6gz6fzr4d", "tkt_01m8jqgc17mph3bqs6gz6fzr4e",
		"tkt_01m8jqgc17mph3bqs6gz6fzr4d_and_more", "tkt_01m8jqgc17mph3bqs6gz6fzr4d_and_less", "tkt_01m8jqgc17mph3bqs6gz6fz"}
	m, sp := NewIndex(), &space{}
	for _, id := range ids {
		m.listNew(sp, &entry{id: id}, nil, nil)
	}
	for a := range ids {
		for b := range ids {
			if got, want := sp.idLess(uint32(a), uint32(b)), ids[a] < ids[b]; got != want {
				t.Errorf("idLess(%q, %q) = %v, want %v", ids[a], ids[b], got, want)
			}
		}
	}
}
