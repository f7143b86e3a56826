package app_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/cursor"
	"github.com/voiceai-platform/voiceai/pkg/eventlog/eventlogtest"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/tickets/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// newHeldFixture is newFixture with its application writing through a
// held log, to arm: appends held once stored (two reports' creates both
// stored before either goes on), batches before they are stored (two
// merges both read what they change before either writes).
func newHeldFixture(t *testing.T) (*fixture, *eventlogtest.Held) {
	f := newFixture(t)
	held := &eventlogtest.Held{Store: f.log, AppendsOnceStored: true}
	f.app = app.New(held, memory.NewIndex(), f.dir, slog.New(slog.DiscardHandler), func() time.Time { return f.clock })
	f.app.Cursors = cursor.NewCodec([]byte("k"))
	return f, held
}

// Two merges at once, A into B and B into A, never leave both tickets
// merged (each pointing at the other, neither in any queue), nor both
// open holding each other's conversations: here both have read the two
// tickets before either writes. One lands; the other finds its target
// merged and answers 409, sent again or not (keyed: it is no replay, as
// it stored nothing).
func TestCrossMergesAtOnceNeverFoldTicketsIntoEachOther(t *testing.T) {
	for i, keyed := range []bool{false, true} {
		f, held := newHeldFixture(t)
		ctx := context.Background()
		a, b := f.reported(t, fmt.Sprintf("conv_a%d", i)), f.reported(t, fmt.Sprintf("conv_b%d", i))
		merge := func(key, target, source string) error {
			if !keyed {
				key = ""
			}
			_, err := f.app.Merge(ctx, principal.Caller{Principal: f.qa, CommandID: key}, target, []string{source})
			return err
		}
		held.Arm(2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		wg.Go(func() { errs[0] = merge("k1", a.TicketId, b.TicketId) })
		wg.Go(func() { errs[1] = merge("k2", b.TicketId, a.TicketId) })
		wg.Wait()
		if (errs[0] == nil) == (errs[1] == nil) {
			t.Fatalf("keyed %v: the merges answered %v and %v; want one merged and one refused", keyed, errs[0], errs[1])
		}
		for _, err := range errs {
			if err != nil {
				wantKind(t, err, apperr.Conflict, "the merge whose target the other merged")
			}
		}
		survivor, gone := a, b
		if errs[0] != nil {
			survivor, gone = b, a
		}
		f.wantMergedInto(t, gone.TicketId, survivor.TicketId)
		again := merge("k2", b.TicketId, a.TicketId)
		if errs[0] != nil {
			again = merge("k1", a.TicketId, b.TicketId)
		}
		wantKind(t, again, apperr.Conflict, "the refused merge sent again")
		f.wantMergedInto(t, gone.TicketId, survivor.TicketId)
	}
}

// reported is a ticket raised on a conversation of agent_1.
func (f *fixture) reported(t *testing.T, conv string) *ticketsv1.Ticket {
	t.Helper()
	tk, _, err := f.app.Create(context.Background(), principal.Caller{Principal: f.qa}, app.CreateInput{ConversationID: &conv, AgentID: ptr("agent_1"), QAComment: ptr("seen")})
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// wantMergedInto fails unless source is merged into target, which is
// active and holds every conversation of both.
func (f *fixture) wantMergedInto(t *testing.T, source, target string) {
	t.Helper()
	ctx := context.Background()
	s, _, err := f.app.Get(ctx, "ws_a", source)
	if err != nil {
		t.Fatal(err)
	}
	tg, _, err := f.app.Get(ctx, "ws_a", target)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != domain.StatusMerged || s.GetMergedIntoTicketId() != target || !domain.IsActive(tg.Status) {
		t.Fatalf("source %s (%s, into %q), target %s (%s)", source, s.Status, s.GetMergedIntoTicketId(), target, tg.Status)
	}
	for _, c := range s.ConversationIds {
		if !slices.Contains(tg.ConversationIds, c) {
			t.Fatalf("the target %s lacks %s of its source: %v", target, c, tg.ConversationIds)
		}
	}
}
