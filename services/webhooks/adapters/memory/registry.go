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
	// before are its states before w, oldest first (at most keptStates):
	// what an event stored a moment ago, not yet fanned out, is matched
	// against.
	before []*webhooksv1.Webhook
}

// keptStates bounds the states kept of a webhook before its current one:
// a fan-out behind by more changes of one webhook than this matches the
// oldest kept.
const keptStates = 16

// asOf is the state of e that was current at ms (its newest made at or
// before it), or its oldest kept when all came later.
func (e entry) asOf(ms int64) *webhooksv1.Webhook {
	if e.w.GetUpdatedAtUnixMs() <= ms {
		return e.w
	}
	for i := len(e.before) - 1; i >= 0; i-- {
		if e.before[i].GetUpdatedAtUnixMs() <= ms {
			return e.before[i]
		}
	}
	if len(e.before) > 0 {
		return e.before[0]
	}
	return e.w
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
	next := entry{seq: seq, w: w}
	if cur, ok := r.byID[id]; ok && cur.w != nil {
		next.before = append(cur.before[max(0, len(cur.before)+1-keptStates):len(cur.before):len(cur.before)], cur.w)
	}
	r.byID[id] = next
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

// Match returns the webhooks of the workspace active and subscribed to
// event when it was stored (at storedAt), as they were then.
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

// subscribed is the webhooks of the workspace that existed when event
// was stored (at storedAt), subscribed to it and as state wants then: a
// webhook deactivated, or unsubscribed, since is still sent what came
// before; one activated, or subscribed, since is not sent what came
// before.
func (r *Registry) subscribed(workspaceID, event string, storedAt time.Time, state func(*webhooksv1.Webhook) bool) []*webhooksv1.Webhook {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []*webhooksv1.Webhook
	at := storedAt.UnixMilli()
	for id := range r.byWS[workspaceID] {
		w := r.byID[id].asOf(at)
		if state(w) && slices.Contains(w.GetEvents(), event) && at >= w.GetCreatedAtUnixMs() {
			out = append(out, w)
		}
	}
	return out
}
