package adapters

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
)

type entry struct {
	seq uint64
	w   *webhooksv1.Webhook // never mutated once stored
}

// Registry is the set of webhooks, kept in memory: it replays the
// WEBHOOKS stream (the newest event of each webhook) at start and follows
// it live, as the gateway's key cache does. The dispatcher matches events
// against it without touching a store.
type Registry struct {
	mu      sync.RWMutex
	byID    map[string]entry
	byWS    map[string]map[string]struct{}
	applied uint64        // every stream event up to here was applied
	changed chan struct{} // closed and replaced when applied advances
	js      jetstream.JetStream
	log     *slog.Logger
	// safeUntil: every webhook event stored before this server time has
	// been applied (see WaitCurrent).
	safeUntil time.Time
	freshMu   sync.Mutex
}

// NewRegistry returns an empty registry.
func NewRegistry(js jetstream.JetStream, log *slog.Logger) *Registry {
	return &Registry{byID: map[string]entry{}, byWS: map[string]map[string]struct{}{}, changed: make(chan struct{}), js: js, log: log}
}

// Follow replays WEBHOOKS and follows it; it returns once the replay is
// complete.
func (r *Registry) Follow(ctx context.Context) error {
	return followReplayed(ctx, r.js, events.WebhooksStream, []string{events.WebhooksAll}, true, r.applyRecord)
}

func (r *Registry) applyRecord(rec eventstore.Record) {
	msg, err := esproto.Decode(rec)
	if err != nil {
		r.log.Error("webhook event undecodable", "seq", rec.Seq, "err", err)
	} else if w, ok := events.StateOf[*webhooksv1.Webhook](msg); ok {
		r.Put(rec.Seq, w)
	}
	r.mu.Lock()
	if rec.Seq > r.applied {
		r.applied = rec.Seq
		close(r.changed)
		r.changed = make(chan struct{})
	}
	r.mu.Unlock()
}

// Put records the state of a webhook at stream sequence seq, unless a
// newer one is known. The command handlers call it inline so a caller
// reads its own writes.
func (r *Registry) Put(seq uint64, w *webhooksv1.Webhook) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := w.GetWebhookId()
	if cur, ok := r.byID[id]; ok && cur.seq >= seq {
		return
	}
	ws := w.GetWorkspaceId()
	if w.DeletedAtUnix != nil {
		r.byID[id] = entry{seq: seq} // keep the sequence: an older event must not resurrect it
		delete(r.byWS[ws], id)
		return
	}
	r.byID[id] = entry{seq: seq, w: w}
	if r.byWS[ws] == nil {
		r.byWS[ws] = map[string]struct{}{}
	}
	r.byWS[ws][id] = struct{}{}
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

// List returns the workspace's live webhooks, oldest first.
func (r *Registry) List(workspaceID string) []*webhooksv1.Webhook {
	r.mu.RLock()
	out := make([]*webhooksv1.Webhook, 0, len(r.byWS[workspaceID]))
	for id := range r.byWS[workspaceID] {
		out = append(out, r.byID[id].w)
	}
	r.mu.RUnlock()
	slices.SortFunc(out, func(a, b *webhooksv1.Webhook) int {
		return cmp.Or(cmp.Compare(a.GetCreatedAtUnixMs(), b.GetCreatedAtUnixMs()), strings.Compare(a.GetWebhookId(), b.GetWebhookId()))
	})
	return out
}

// Match returns the active webhooks of the workspace subscribed to event
// that existed when the event was stored (at storedAt).
func (r *Registry) Match(workspaceID, event string, storedAt time.Time) []*webhooksv1.Webhook {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []*webhooksv1.Webhook
	for id := range r.byWS[workspaceID] {
		w := r.byID[id].w
		if w.GetActive() && slices.Contains(w.GetEvents(), event) && storedAt.UnixMilli() >= w.GetCreatedAtUnixMs() {
			out = append(out, w)
		}
	}
	return out
}

// WaitCurrent returns once every webhook event stored before an event
// stored at storedAt has been applied, so an event published right after
// a webhook was created is matched against it. It asks the stream for its
// last sequence (one request, shared by every event stored before the
// answer) and waits for the follower to get there.
func (r *Registry) WaitCurrent(ctx context.Context, storedAt time.Time) error {
	r.freshMu.Lock()
	defer r.freshMu.Unlock()
	r.mu.RLock()
	safe := !storedAt.After(r.safeUntil)
	r.mu.RUnlock()
	if safe {
		return nil
	}
	str, err := r.js.Stream(ctx, events.WebhooksStream)
	if err != nil {
		return err
	}
	info := str.CachedInfo()
	if info == nil {
		return nil
	}
	last, ts := info.State.LastSeq, info.TimeStamp
	for {
		r.mu.RLock()
		applied, ch := r.applied, r.changed
		r.mu.RUnlock()
		if applied >= last {
			break
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	r.mu.Lock()
	if ts.After(r.safeUntil) {
		r.safeUntil = ts
	}
	r.mu.Unlock()
	return nil
}
