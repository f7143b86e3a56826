// Package registrytest holds the conformance suites of the webhook
// registry's two views, run on every implementation (memory; the
// registry following WEBHOOKS, whose follower applies each change again):
//
//   - Run, app.Registry, the management side's: a change shows once it is
//     put, a webhook keeps its newest change whatever order its changes
//     come in, and a workspace's live webhooks are listed oldest first.
//   - RunSubscriptions, app.Subscriptions, the dispatcher's: once
//     WaitCurrent returns, every webhook change stored before shows; an
//     event is matched to the webhooks of its workspace as they were when
//     it was stored; what was learnt of deleted webhooks is kept.
package registrytest

import (
	"slices"
	"testing"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/services/webhooks/app"
)

// Store writes a change of a webhook (w: its state after it) to the log
// the implementation follows, as the repository does before it puts the
// change, and returns its sequence there.
type Store func(w *webhooksv1.Webhook) (seq uint64, err error)

// Opener opens a Registry over fresh storage, store, and settle, which
// returns once the registry has applied what it follows of the log (in
// memory, nothing).
type Opener func(t *testing.T) (reg app.Registry, store Store, settle func(t *testing.T))

// Run checks open against what app.Registry promises.
func Run(t *testing.T, open Opener) {
	stored := func(t *testing.T, store Store, w *webhooksv1.Webhook) uint64 {
		t.Helper()
		seq, err := store(w)
		if err != nil {
			t.Fatalf("storing %s: %v", w.GetWebhookId(), err)
		}
		return seq
	}
	wantList := func(t *testing.T, reg app.Registry, ws string, want ...string) {
		t.Helper()
		var got []string
		for _, w := range reg.List(ws) {
			got = append(got, w.GetWebhookId())
		}
		if !slices.Equal(got, want) {
			t.Errorf("List(%s): %v, want %v", ws, got, want)
		}
	}

	// The repository puts each change inline: a caller reads its own
	// writes before any follower of the log got there.
	t.Run("a change shows as soon as it is put", func(t *testing.T) {
		reg, store, _ := open(t)
		w := hook("ws_a", "whk_1", t0, ticketCreated)
		reg.Put(stored(t, store, w), w)
		wantGet(t, reg, w)
		wantList(t, reg, "ws_a", "whk_1")

		w = changed(w, func(n *webhooksv1.Webhook) { n.Url = "https://receiver.example/moved" })
		reg.Put(stored(t, store, w), w)
		wantGet(t, reg, w)

		reg.Put(stored(t, store, deleted(w)), deleted(w))
		wantGone(t, reg, "ws_a", "whk_1")
		wantList(t, reg, "ws_a")
	})

	// A follower applies changes the repository already put; two writers
	// put theirs in either order.
	t.Run("the newest change wins whatever order they are put in", func(t *testing.T) {
		reg, store, settle := open(t)
		created := hook("ws_a", "whk_1", t0, ticketCreated)
		updated := changed(created, func(n *webhooksv1.Webhook) { n.Events = []string{"call_ended"} })
		createdAt, updatedAt := stored(t, store, created), stored(t, store, updated)
		reg.Put(updatedAt, updated)
		reg.Put(createdAt, created)
		wantGet(t, reg, updated)
		settle(t)
		wantGet(t, reg, updated)

		gone := deleted(updated)
		reg.Put(stored(t, store, gone), gone)
		reg.Put(updatedAt, updated) // must not bring it back
		reg.Put(createdAt, created)
		wantGone(t, reg, "ws_a", "whk_1")
		wantList(t, reg, "ws_a")
		settle(t)
		wantGone(t, reg, "ws_a", "whk_1")
		wantList(t, reg, "ws_a")
	})

	t.Run("List is the workspace's live webhooks oldest first; Get its own workspace's", func(t *testing.T) {
		reg, store, settle := open(t)
		put := func(w *webhooksv1.Webhook) *webhooksv1.Webhook {
			reg.Put(stored(t, store, w), w)
			return w
		}
		put(hook("ws_a", "whk_third", t0+3000, ticketCreated))
		put(hook("ws_a", "whk_first", t0+1000, ticketCreated))
		put(hook("ws_a", "whk_second", t0+2000, ticketCreated))
		put(changed(hook("ws_a", "whk_inactive", t0+4000, ticketCreated), func(n *webhooksv1.Webhook) { n.Active = false })) // live, not deleted
		put(deleted(put(hook("ws_a", "whk_deleted", t0+500, ticketCreated))))
		other := put(hook("ws_b", "whk_other", t0, ticketCreated))
		settle(t)
		wantList(t, reg, "ws_a", "whk_first", "whk_second", "whk_third", "whk_inactive")
		wantList(t, reg, "ws_b", "whk_other")
		wantList(t, reg, "ws_c")
		wantGet(t, reg, other)
		wantGone(t, reg, "ws_a", "whk_other")
		wantGone(t, reg, "ws_a", "whk_never")
	})
}
