package eventstore

import (
	"context"
	"errors"
	"log/slog"

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

	healer Healer
}

// Heal is told of an operation's failure: when it may come of the stream
// being gone, the stream is looked up in the background and made again
// if it is (the caller's next attempt finds it). A nil KeptStream keeps
// nothing.
func (k *KeptStream) Heal(err error) {
	if k != nil {
		k.healer.Heal(err, k.remake)
	}
}

// remake makes the stream again if it is gone.
func (k *KeptStream) remake(ctx context.Context) {
	if _, err := k.JS.Stream(ctx, k.Config.Name); !errors.Is(err, jetstream.ErrStreamNotFound) {
		return // there (made again meanwhile), or not to be told now
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
		return
	}
	log.Warn("the stream was deleted; made it again, empty", "stream", cfg.Name)
}
