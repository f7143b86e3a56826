package adapters

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"
	"github.com/voiceai-platform/voiceai/services/webhooks/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"

	"github.com/voiceai-platform/voiceai/pkg/applied"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
)

var (
	_ app.Subscriptions   = (*Registry)(nil)
	_ app.AttemptRecorder = (*AttemptPublisher)(nil)
	_ app.Queue           = StreamQueue{}
)

// Registry is the set of webhooks (memory.Registry) kept current from the
// WEBHOOKS stream: it replays the stream (the newest event of each
// webhook) at start and follows it live, as the gateway's key cache does.
type Registry struct {
	*memory.Registry
	applied applied.Mark // every stream event up to here was applied
	js      jetstream.JetStream
	log     *slog.Logger

	freshMu sync.Mutex // held by a wait for the stream, and guards:
	// safeUntil: every webhook event stored before this server time has
	// been applied (see WaitCurrent).
	safeUntil time.Time
	lastCheck time.Time // when catchUp last asked the stream
}

// checkSpacing is the least time between two questions WaitCurrent asks
// the stream. Each answer covers every event stored up to the one that
// asked, so under load a batch of the fan-out's events shares one
// question instead of asking about each (thousands of reads a second, one
// per ticket created); an event that needs the next one waits for it.
// 2 ms is below the gap between events at a few hundred a second, which
// never wait, and saves most questions at thousands a second.
const checkSpacing = 2 * time.Millisecond

// NewRegistry returns an empty registry following js.
func NewRegistry(js jetstream.JetStream, log *slog.Logger) *Registry {
	return &Registry{Registry: memory.NewRegistry(), js: js, log: log}
}

// Follow replays WEBHOOKS and follows it; it returns once the replay is
// complete. A stream made anew (a restore) empties the registry before
// its records are applied from the start: webhooks the new stream lacks
// would go on being delivered to, with nobody able to delete them, and
// its changes, numbered from 1 again, would be refused as older.
func (r *Registry) Follow(ctx context.Context) error {
	f, err := eventstore.Follow(ctx, r.js, events.WebhooksStream, []string{events.WebhooksAll}, true, r.applyRecord)
	if err != nil {
		return err
	}
	f.WhenMadeAnew(func() {
		r.log.Warn("the WEBHOOKS stream was made anew: the registry is emptied and loaded again from it")
		r.Registry.Reset()
		r.applied.Reset()
	})
	return f.Wait(ctx)
}

func (r *Registry) applyRecord(rec eventstore.Record) {
	msg, err := esproto.Decode(rec)
	if err != nil {
		r.log.Error("webhook event undecodable", "seq", rec.Seq, "err", err)
	} else if w, ok := events.StateOf[*webhooksv1.Webhook](msg); ok {
		r.Put(rec.Seq, w)
	}
	r.applied.Advance(rec.Seq)
}

// WaitCurrent returns once every webhook event stored before an event
// stored at storedAt has been applied, so an event published right after
// a webhook was created is matched against it. It catches up (catchUp)
// unless an earlier answer covers storedAt. The event at storedAt was
// stored before the read was asked, and so was every webhook event stored
// before it: the answer covers storedAt, and every earlier time, for
// later callers. storedAt is the stream's clock (an event's time), so
// the times it vouches for are too.
func (r *Registry) WaitCurrent(ctx context.Context, storedAt time.Time) error {
	r.freshMu.Lock()
	defer r.freshMu.Unlock()
	if !storedAt.After(r.safeUntil) {
		return nil
	}
	if err := r.catchUp(ctx); err != nil {
		return err
	}
	r.safeUntil = storedAt // later than it, as just checked
	return nil
}

// CatchUp returns once every webhook event stored before the call has
// been applied. It vouches for no time to later callers: the caller's
// clock need not be the stream's.
func (r *Registry) CatchUp(ctx context.Context) error {
	r.freshMu.Lock()
	defer r.freshMu.Unlock()
	return r.catchUp(ctx)
}

// catchUp reads the stream's last event (one direct get, at most one per
// checkSpacing) and waits for the follower to get there. freshMu is held.
//
// A read of the last event, not the stream's info: an info request is a
// JetStream API call, answered in JSON with the stream's whole state and
// announced to the account as an advisory, and under load the fan-out
// asks hundreds of times a second.
func (r *Registry) catchUp(ctx context.Context) error {
	if wait := time.Until(r.lastCheck.Add(checkSpacing)); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	r.lastCheck = time.Now()
	var last uint64
	m, err := eventstore.GetMsg(ctx, r.js, events.WebhooksStream, eventstore.MsgRequest{LastFor: events.WebhooksAll})
	switch {
	case err == nil:
		last = m.Sequence
	case !errors.Is(err, jetstream.ErrMsgNotFound): // none: nothing to wait for
		return err
	}
	return r.applied.Wait(ctx, last)
}
