package app_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/cursor"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/tickets/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// heldLog holds the callers of the appends it is armed for, once stored,
// until that many are: two merges' first writes (their targets') are both
// stored before either goes on, the interleaving that folded two tickets
// into each other.
type heldLog struct {
	eventlog.Store
	mu      sync.Mutex
	waiting int
	release chan struct{}
}

func (h *heldLog) arm(n int) {
	h.mu.Lock()
	h.waiting, h.release = n, make(chan struct{})
	h.mu.Unlock()
}

func (h *heldLog) Append(ctx context.Context, subject string, expected uint64, commandID string, ev eventlog.Event) (eventlog.Appended, error) {
	res, err := h.Store.Append(ctx, subject, expected, commandID, ev)
	h.mu.Lock()
	release := h.release
	if h.waiting > 0 {
		if h.waiting--; h.waiting == 0 {
			close(h.release)
			h.release = nil
		}
	}
	h.mu.Unlock()
	if release != nil {
		<-release
	}
	return res, err
}

// newHeldFixture is newFixture with its application writing through a
// heldLog, to arm.
func newHeldFixture(t *testing.T) (*fixture, *heldLog) {
	f := newFixture(t)
	held := &heldLog{Store: f.log}
	f.app = app.New(held, memory.NewIndex(), f.dir, slog.New(slog.DiscardHandler), func() time.Time { return f.clock })
	f.app.Cursors = cursor.NewCodec([]byte("k"))
	return f, held
}

// Two merges at once, A into B and B into A, never leave both tickets
// merged (each pointing at the other, neither in any queue), however
// their writes interleave: here both targets are written before either
// merge goes on. A merge that cannot complete answers 409; sent again one
// after the other (keyed: replayed), the two leave exactly one ticket
// merged into the other.
func TestCrossMergesAtOnceNeverFoldTicketsIntoEachOther(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		f, held := newHeldFixture(t)
		ctx := context.Background()
		a, b := f.manual(t, "agent_1", "a"), f.manual(t, "agent_1", "b")
		merge := func(key, target, source string) error {
			if !keyed {
				key = ""
			}
			_, err := f.app.Merge(ctx, principal.Caller{Principal: f.qa, CommandID: key}, target, []string{source})
			if err != nil {
				wantKind(t, err, apperr.Conflict, "a merge that cannot complete")
			}
			return err
		}
		held.arm(2)
		var wg sync.WaitGroup
		wg.Go(func() { _ = merge("k1", a.TicketId, b.TicketId) })
		wg.Go(func() { _ = merge("k2", b.TicketId, a.TicketId) })
		wg.Wait()
		if n := f.mergedOf(t, a.TicketId, b.TicketId); n > 1 {
			t.Fatalf("keyed %v: both tickets merged into each other", keyed)
		}
		_, _ = merge("k1", a.TicketId, b.TicketId), merge("k2", b.TicketId, a.TicketId)
		if n := f.mergedOf(t, a.TicketId, b.TicketId); n != 1 {
			t.Fatalf("keyed %v: %d of the two tickets merged after both merges were sent again; want 1", keyed, n)
		}
	}
}

// mergedOf counts the merged among tickets ids.
func (f *fixture) mergedOf(t *testing.T, ids ...string) int {
	t.Helper()
	n := 0
	for _, id := range ids {
		tk, _, err := f.app.Get(context.Background(), "ws_a", id)
		if err != nil {
			t.Fatal(err)
		}
		if tk.Status == domain.StatusMerged {
			n++
		}
	}
	return n
}
