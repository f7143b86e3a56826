package memory

import (
	"context"
	"slices"
	"sync"
	"time"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/services/webhooks/app"
)

var _ app.Subscriptions = (*Registry)(nil)

type entry struct {
	seq uint64
	w   *webhooksv1.Webhook // never mutated once stored
}

// Registry is the set of webhooks, kept in memory: app.Registry on its
// own, and what the service's registry (adapters.Registry) keeps current
// from the WEBHOOKS stream. The dispatcher matches events against it
// without touching a store.
type Registry struct {
	mu   sync.RWMutex
	byID map[string]entry
	byWS map[string]map[string]struct{}
	// deleted are told of each deletion Put records (WhenDeleted).
	deleted []func(webhookID string)
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{byID: map[string]entry{}, byWS: map[string]map[string]struct{}{}}
}

// Put records the state of a webhook at stream sequence seq, unless a
// newer one is known. The command handlers call it inline so a caller
// reads its own writes.
func (r *Registry) Put(seq uint64, w *webhooksv1.Webhook) {
	if r.put(seq, w) {
		r.mu.RLock()
		told := r.deleted
		r.mu.RUnlock()
		for _, tell := range told {
			tell(w.GetWebhookId())
		}
	}
}

// put is Put under the lock; it reports a deletion recorded.
func (r *Registry) put(seq uint64, w *webhooksv1.Webhook) (deleted bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := w.GetWebhookId()
	if cur, ok := r.byID[id]; ok && cur.seq >= seq {
		return false
	}
	ws := w.GetWorkspaceId()
	if w.DeletedAtUnix != nil {
		r.byID[id] = entry{seq: seq} // keep the sequence: an older event must not resurrect it
		delete(r.byWS[ws], id)
		return true
	}
	r.byID[id] = entry{seq: seq, w: w}
	if r.byWS[ws] == nil {
		r.byWS[ws] = map[string]struct{}{}
	}
	r.byWS[ws][id] = struct{}{}
	return false
}

// Reset empties the registry: its stream was made anew (a restore).
// Those told of deletions stay told.
func (r *Registry) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byID, r.byWS = map[string]entry{}, map[string]map[string]struct{}{}
}

// WhenDeleted has tell told of each webhook deletion recorded from now
// on, once the registry holds it, so that what is kept of a webhook
// elsewhere (its delivery log, its failure runs) goes with it.
func (r *Registry) WhenDeleted(tell func(webhookID string)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deleted = append(r.deleted, tell)
}

// Gone reports a webhook known deleted.
func (r *Registry) Gone(id string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.byID[id]
	return ok && e.w == nil
}

// Get returns a live webhook of the workspace.
func (r *Registry) Get(workspaceID, id string) (*webhooksv1.Webhook, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.byID[id]
	if !ok || e.w == nil || e.w.GetWorkspaceId() != workspaceID {
		return nil, false
	}
	return e.w, true
}

// Known reports whether the registry has applied any event of webhook id,
// deleted ones included: catching up with the stream cannot make such a
// webhook appear in Get where it does not already.
func (r *Registry) Known(id string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.byID[id]
	return ok
}

// WaitCurrent returns at once: every change is put here inline, so the
// registry is always current (adapters.Registry, which follows a stream,
// waits).
func (r *Registry) WaitCurrent(context.Context, time.Time) error { return nil }

// CatchUp returns at once, as WaitCurrent does.
func (r *Registry) CatchUp(context.Context) error { return nil }

// List returns the workspace's live webhooks, oldest first.
func (r *Registry) List(workspaceID string) []*webhooksv1.Webhook {
	r.mu.RLock()
	out := make([]*webhooksv1.Webhook, 0, len(r.byWS[workspaceID]))
	for id := range r.byWS[workspaceID] {
		out = append(out, r.byID[id].w)
	}
	r.mu.RUnlock()
	slices.SortFunc(out, app.CompareListed)
	return out
}

// Match returns the active webhooks of the workspace subscribed to event
// that existed when the event was stored (at storedAt).
func (r *Registry) Match(workspaceID, event string, storedAt time.Time) []*webhooksv1.Webhook {
	return r.subscribed(workspaceID, event, storedAt, func(w *webhooksv1.Webhook) bool { return w.GetActive() })
}

// MatchMissed is the webhooks of the workspace subscribed to event that
// the dispatcher disabled (their deliveries kept failing, or the receiver
// was gone) when it was stored: they are sent nothing, but the event is
// logged for them as not sent, so that recover replays it once they are
// enabled again.
func (r *Registry) MatchMissed(workspaceID, event string, storedAt time.Time) []*webhooksv1.Webhook {
	return r.subscribed(workspaceID, event, storedAt, func(w *webhooksv1.Webhook) bool {
		return !w.GetActive() && w.GetDisabledReason() != ""
	})
}

// subscribed is the webhooks of the workspace subscribed to event that
// existed when it was stored (at storedAt) and are as state wants.
func (r *Registry) subscribed(workspaceID, event string, storedAt time.Time, state func(*webhooksv1.Webhook) bool) []*webhooksv1.Webhook {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []*webhooksv1.Webhook
	for id := range r.byWS[workspaceID] {
		w := r.byID[id].w
		if state(w) && slices.Contains(w.GetEvents(), event) && storedAt.UnixMilli() >= w.GetCreatedAtUnixMs() {
			out = append(out, w)
		}
	}
	return out
}
