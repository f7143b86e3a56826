package eventstore

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// KeptStream is a stream of passing work (a job queue) its users make
// again, empty, when they find it deleted (an operator's slip, a restore
// that left it out): what it held is lost with it, but new work flows
// again at once, where before every job waited for a restart. Not for an
// event store: a lost store of facts is to be restored, not made anew.
type KeptStream struct {
	JS     jetstream.JetStream
	Config jetstream.StreamConfig // made again with Sibling's replication
	// Sibling is a stream of the same deployment, which every stream's
	// replication is alike in (VOICEAI_STREAM_REPLICAS).
	Sibling string
	Log     *slog.Logger

	mu sync.Mutex // one check at a time
}

// Heal is told of an operation's failure: when it came of the stream
// being gone, the stream is made again. It reports whether it was; a
// nil KeptStream keeps nothing.
func (k *KeptStream) Heal(ctx context.Context, err error) bool {
	if k == nil || !maybeGone(err) {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, err := k.JS.Stream(ctx, k.Config.Name); !errors.Is(err, jetstream.ErrStreamNotFound) {
		return false // there (made again meanwhile), or not to be told now
	}
	cfg := k.Config
	if s, err := k.JS.Stream(ctx, k.Sibling); err == nil {
		cfg.Replicas = s.CachedInfo().Config.Replicas
	}
	log := k.Log
	if log == nil {
		log = slog.Default()
	}
	if _, err := EnsureConfig(ctx, k.JS, cfg); err != nil {
		log.Error("the stream was deleted and cannot be made again yet", "stream", cfg.Name, "err", err)
		return false
	}
	log.Warn("the stream was deleted; made it again, empty", "stream", cfg.Name)
	return true
}

// maybeGone reports whether err may come of the stream (or bucket) an
// operation was on being gone: a publish nobody stores, a request nobody
// answers, a lookup that finds nothing. Only a lookup tells.
func maybeGone(err error) bool {
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrBucketNotFound)
}
