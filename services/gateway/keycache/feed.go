package keycache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"
	identityv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/identity/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
)

// Feed keeps a cache current from the IDENTITY stream.
type Feed struct {
	cache  *Cache
	log    *slog.Logger
	ready  chan struct{}
	isDone atomic.Bool
}

// Ready is closed once the cache holds every key that existed at start.
func (f *Feed) Ready() <-chan struct{} { return f.ready }

// IsReady reports whether the initial catch-up is complete.
func (f *Feed) IsReady() bool { return f.isDone.Load() }

// Start subscribes cache to the identity events. Events are
// state-carrying, so an ordered consumer delivering only the last message
// per subject replays the current state of every key and account, then
// follows new events live.
func Start(ctx context.Context, js jetstream.JetStream, cache *Cache, log *slog.Logger) (*Feed, error) {
	stream, err := waitForStream(ctx, js, events.IdentityStream, log)
	if err != nil {
		return nil, err
	}
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{events.IdentityKeysAll, events.IdentityAccountsAll},
		DeliverPolicy:  jetstream.DeliverLastPerSubjectPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("identity consumer: %w", err)
	}
	f := &Feed{cache: cache, log: log, ready: make(chan struct{})}
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, err
	}
	if info.NumPending == 0 {
		f.markReady()
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		f.apply(m)
		if !f.IsReady() {
			if meta, err := m.Metadata(); err == nil && meta.NumPending == 0 {
				f.markReady()
			}
		}
	})
	if err != nil {
		return nil, err
	}
	go func() { <-ctx.Done(); cc.Stop() }()
	return f, nil
}

func (f *Feed) markReady() {
	if f.isDone.CompareAndSwap(false, true) {
		close(f.ready)
	}
}

func (f *Feed) apply(m jetstream.Msg) {
	rec, err := eventstore.RecordFromMsg(m)
	if err != nil {
		f.log.Error("identity event unreadable", "err", err)
		return
	}
	msg, err := esproto.Decode(rec)
	if err != nil {
		f.log.Error("identity event undecodable", "seq", rec.Seq, "err", err)
		return
	}
	switch ev := msg.(type) {
	case *identityv1.ApiKeyCreated:
		f.cache.PutKey(ev.GetKey())
	case *identityv1.ApiKeyUpdated:
		f.cache.PutKey(ev.GetKey())
	case *identityv1.ApiKeyRevoked:
		f.cache.PutKey(ev.GetKey())
	case *identityv1.ServiceAccountCreated:
		f.cache.PutAccount(ev.GetAccount())
	}
}

// waitForStream waits for the identity service to create its stream, so
// the processes of a split deployment may start in any order.
func waitForStream(ctx context.Context, js jetstream.JetStream, name string, log *slog.Logger) (jetstream.Stream, error) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for warned := false; ; {
		s, err := js.Stream(ctx, name)
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, fmt.Errorf("stream %s: %w", name, err)
		}
		if !warned {
			log.Warn("waiting for stream; is the identity service running?", "stream", name)
			warned = true
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}
