package registrytest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// Change is what happened to a webhook, as the repository writes it.
type Change int

const (
	Created Change = iota
	Updated
	Disabled // by the dispatcher: its receiver failed or is gone
	Deleted
)

// Record stores a change of a webhook (w: its state after the change)
// where the implementation learns of it, and returns when it was stored:
// an event stored after the change carries this time or a later one.
// Fan-outs run side by side: it may be called from several goroutines.
type Record func(c Change, w *webhooksv1.Webhook) (storedAt time.Time, err error)

// SubscriptionsOpener opens Subscriptions over fresh storage, and
// record, which stores the changes it learns of.
type SubscriptionsOpener func(t *testing.T) (app.Subscriptions, Record)

func disabled(w *webhooksv1.Webhook, reason string) *webhooksv1.Webhook {
	return changed(w, func(n *webhooksv1.Webhook) {
		at := int64(t0/1000 + 60)
		n.Active, n.DisabledReason, n.DisabledAtUnix = false, reason, &at
	})
}

func ids(ws []*webhooksv1.Webhook) []string {
	out := testkit.IDs(ws, (*webhooksv1.Webhook).GetWebhookId)
	slices.Sort(out) // Match promises no order
	return out
}

// RunSubscriptions checks open against what app.Subscriptions promises.
func RunSubscriptions(t *testing.T, open SubscriptionsOpener) {
	// current waits, within a failure limit, until s shows every change
	// stored up to storedAt.
	current := func(t *testing.T, s app.Subscriptions, storedAt time.Time) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.WaitCurrent(ctx, storedAt); err != nil {
			t.Fatalf("WaitCurrent: %v", err)
		}
	}
	wantMatch := func(t *testing.T, s app.Subscriptions, ws, event string, at time.Time, match, missed []string) {
		t.Helper()
		if got := ids(s.Match(ws, event, at)); !slices.Equal(got, match) {
			t.Errorf("Match(%s, %s): %v, want %v", ws, event, got, match)
		}
		if got := ids(s.MatchMissed(ws, event, at)); !slices.Equal(got, missed) {
			t.Errorf("MatchMissed(%s, %s): %v, want %v", ws, event, got, missed)
		}
	}

	// opened is a fresh Subscriptions and its Record, failing the test
	// when a change cannot be stored.
	opened := func(t *testing.T) (app.Subscriptions, func(Change, *webhooksv1.Webhook) time.Time) {
		s, record := open(t)
		return s, func(c Change, w *webhooksv1.Webhook) time.Time {
			t.Helper()
			storedAt, err := record(c, w)
			if err != nil {
				t.Fatalf("storing %s: %v", w.GetWebhookId(), err)
			}
			return storedAt
		}
	}

	t.Run("after WaitCurrent every change stored before it shows", func(t *testing.T) {
		s, record := opened(t)
		var last time.Time
		var live []*webhooksv1.Webhook
		for i := range 20 {
			w := hook("ws_a", fmt.Sprintf("whk_%02d", i), t0, ticketCreated)
			record(Created, w)
			switch i % 3 {
			case 0:
				w = changed(w, func(n *webhooksv1.Webhook) { n.Events = []string{ticketCreated, callEnded} })
				last = record(Updated, w)
				live = append(live, w)
			case 1:
				last = record(Deleted, deleted(w))
			default:
				live = append(live, w)
			}
		}
		current(t, s, last)
		for _, w := range live {
			wantGet(t, s, w)
		}
		for i := 1; i < 20; i += 3 {
			id := fmt.Sprintf("whk_%02d", i)
			wantGone(t, s, "ws_a", id)
			if !s.Known(id) {
				t.Errorf("Known(%s) is false after its deletion was applied", id)
			}
		}
		var updated []string
		for i := 0; i < 20; i += 3 {
			updated = append(updated, fmt.Sprintf("whk_%02d", i))
		}
		wantMatch(t, s, "ws_a", callEnded, time.UnixMilli(t0), updated, nil)
		if got := len(s.Match("ws_a", ticketCreated, time.UnixMilli(t0))); got != len(live) {
			t.Errorf("Match(ws_a, %s) has %d webhooks, want the %d live ones", ticketCreated, got, len(live))
		}
	})

	// A replica handed a job for a webhook it does not know catches up
	// with no event's time to go by.
	t.Run("after CatchUp every change stored before it shows", func(t *testing.T) {
		s, record := opened(t)
		a := hook("ws_a", "whk_a", t0, ticketCreated)
		record(Created, a)
		record(Deleted, deleted(hook("ws_a", "whk_gone", t0, ticketCreated)))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.CatchUp(ctx); err != nil {
			t.Fatalf("CatchUp: %v", err)
		}
		wantGet(t, s, a)
		wantGone(t, s, "ws_a", "whk_gone")
		if !s.Known("whk_gone") {
			t.Error("Known(whk_gone) is false after its deletion was applied")
		}
	})

	t.Run("Get finds a live webhook in its own workspace only; Known any applied", func(t *testing.T) {
		s, record := opened(t)
		a, b := hook("ws_a", "whk_a", t0, ticketCreated), hook("ws_b", "whk_b", t0, ticketCreated)
		record(Created, a)
		current(t, s, record(Created, b))
		wantGet(t, s, a)
		wantGet(t, s, b)
		wantGone(t, s, "ws_b", "whk_a")
		wantGone(t, s, "ws_a", "whk_b")
		wantGone(t, s, "ws_a", "whk_never")
		if !s.Known("whk_a") || !s.Known("whk_b") {
			t.Error("Known is false for an applied webhook")
		}
		if s.Known("whk_never") {
			t.Error("Known is true for a webhook never stored")
		}
	})

	t.Run("an event reaches the webhooks of its workspace as they were when it was stored", func(t *testing.T) {
		s, record := opened(t)
		at := time.UnixMilli(t0 + 500) // when the event was stored
		create := func(w *webhooksv1.Webhook) *webhooksv1.Webhook {
			record(Created, w)
			return w
		}
		create(hook("ws_a", "whk_active", t0, callEnded, ticketCreated))
		create(hook("ws_a", "whk_other_event", t0, callEnded))
		create(hook("ws_a", "whk_created_at_the_event", at.UnixMilli(), ticketCreated))
		create(hook("ws_a", "whk_created_after", at.UnixMilli()+1, ticketCreated))
		record(Updated, changed(create(hook("ws_a", "whk_deactivated", t0, ticketCreated)),
			func(n *webhooksv1.Webhook) { n.Active = false })) // by a user: no reason
		record(Disabled, disabled(create(hook("ws_a", "whk_failing", t0, ticketCreated)), domain.DisabledFailing))
		record(Disabled, disabled(create(hook("ws_a", "whk_gone", t0, ticketCreated)), domain.DisabledGone))
		record(Disabled, disabled(create(hook("ws_a", "whk_gone_after", at.UnixMilli()+1, ticketCreated)), domain.DisabledGone))
		record(Deleted, deleted(create(hook("ws_a", "whk_deleted", t0, ticketCreated))))
		record(Disabled, disabled(create(hook("ws_b", "whk_b_gone", t0, ticketCreated)), domain.DisabledGone))
		current(t, s, record(Created, hook("ws_b", "whk_b", t0, ticketCreated)))

		wantMatch(t, s, "ws_a", ticketCreated, at, []string{"whk_active", "whk_created_at_the_event"}, []string{"whk_failing", "whk_gone"})
		wantMatch(t, s, "ws_a", callEnded, at, []string{"whk_active", "whk_other_event"}, nil)
		wantMatch(t, s, "ws_a", "agent_updated", at, nil, nil)
		wantMatch(t, s, "ws_b", ticketCreated, at, []string{"whk_b"}, []string{"whk_b_gone"})
		wantMatch(t, s, "ws_c", ticketCreated, at, nil, nil)
	})

	t.Run("an event is matched against each webhook as it was when the event was stored", func(t *testing.T) {
		s, record := opened(t)
		at := func(ms int64) time.Time { return time.UnixMilli(t0 + ms) }
		w := hook("ws_a", "whk_toggled", t0, ticketCreated)
		w.UpdatedAtUnixMs = t0
		record(Created, w)
		stateAt := func(ms int64, change func(*webhooksv1.Webhook)) {
			w = changed(w, func(n *webhooksv1.Webhook) { change(n); n.UpdatedAtUnixMs = t0 + ms })
			record(Updated, w)
		}
		stateAt(200, func(n *webhooksv1.Webhook) { n.Active = false })
		stateAt(400, func(n *webhooksv1.Webhook) { n.Active = true })
		stateAt(600, func(n *webhooksv1.Webhook) { n.Events = []string{callEnded} })
		current(t, s, record(Updated, changed(w, func(n *webhooksv1.Webhook) {})))
		for _, c := range []struct {
			ms    int64
			event string
			match []string
		}{
			{100, ticketCreated, []string{"whk_toggled"}}, // active then, paused since
			{300, ticketCreated, nil},                     // paused then, active since
			{500, ticketCreated, []string{"whk_toggled"}}, // subscribed then, not since
			{700, ticketCreated, nil},
			{500, callEnded, nil}, // not subscribed then, since
			{700, callEnded, []string{"whk_toggled"}},
		} {
			if got := ids(s.Match("ws_a", c.event, at(c.ms))); !slices.Equal(got, c.match) {
				t.Errorf("Match(%s at t0+%d ms): %v, want %v", c.event, c.ms, got, c.match)
			}
		}
	})

	t.Run("each change replaces the one before", func(t *testing.T) {
		s, record := opened(t)
		at := time.UnixMilli(t0)
		step := func(c Change, w *webhooksv1.Webhook) *webhooksv1.Webhook {
			t.Helper()
			current(t, s, record(c, w))
			if c != Deleted {
				wantGet(t, s, w)
			}
			return w
		}
		w := step(Created, hook("ws_a", "whk_1", t0, ticketCreated))
		wantMatch(t, s, "ws_a", ticketCreated, at, []string{"whk_1"}, nil)

		w = step(Updated, changed(w, func(n *webhooksv1.Webhook) { n.Events = []string{callEnded} }))
		wantMatch(t, s, "ws_a", ticketCreated, at, nil, nil)
		wantMatch(t, s, "ws_a", callEnded, at, []string{"whk_1"}, nil)

		w = step(Disabled, disabled(w, domain.DisabledFailing))
		wantMatch(t, s, "ws_a", callEnded, at, nil, []string{"whk_1"})

		w = step(Updated, changed(w, func(n *webhooksv1.Webhook) { n.Active, n.DisabledReason = true, "" })) // enabled again
		wantMatch(t, s, "ws_a", callEnded, at, []string{"whk_1"}, nil)

		step(Deleted, deleted(w))
		wantGone(t, s, "ws_a", "whk_1")
		wantMatch(t, s, "ws_a", callEnded, at, nil, nil)
		if !s.Known("whk_1") {
			t.Error("Known is false for a deleted webhook")
		}
	})

	// Fan-outs wait side by side, each for the changes stored before its
	// own event; one waiter's answer may be another's.
	t.Run("concurrent waiters each see what was stored before them", func(t *testing.T) {
		s, record := open(t)
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := range 10 {
					w := hook("ws_a", fmt.Sprintf("whk_%d_%d", g, i), t0, ticketCreated)
					storedAt, err := record(Created, w)
					if err != nil {
						t.Errorf("storing %s: %v", w.GetWebhookId(), err)
						return
					}
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					err = s.WaitCurrent(ctx, storedAt)
					cancel()
					if err != nil {
						t.Errorf("WaitCurrent: %v", err)
						return
					}
					if _, ok := s.Get("ws_a", w.GetWebhookId()); !ok {
						t.Errorf("%s stored before WaitCurrent is not there after it", w.GetWebhookId())
					}
				}
			})
		}
		wg.Wait()
	})
}
