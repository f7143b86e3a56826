package eventstore

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/tick"
)

// KeptKeyValue is a key-value bucket its users make again, empty, when
// they find it deleted (an operator's slip, a restore that left it out),
// as a deleted durable consumer is made again by its consumers: left
// gone, every operation on it failed until the process restarted. The
// client's handle names the bucket, not one stream, so it serves the
// bucket made again as it is.
type KeptKeyValue struct {
	jetstream.KeyValue
	js   jetstream.JetStream
	cfg  jetstream.KeyValueConfig
	log  *slog.Logger
	made atomic.Int64 // when the bucket in use was made, unix nanoseconds
	mu   sync.Mutex   // one check at a time

	healer Healer
}

// KeepKeyValue creates or opens cfg's bucket (EnsureKeyValue) to be kept.
func KeepKeyValue(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig, log *slog.Logger) (*KeptKeyValue, error) {
	kv, err := EnsureKeyValue(ctx, js, cfg)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	k := &KeptKeyValue{KeyValue: kv, js: js, cfg: cfg, log: log.With("bucket", cfg.Bucket)}
	k.noteMade(ctx)
	return k, nil
}

// Made is when the bucket in use was made, as last looked up: a bucket
// made again lost what the one before held.
func (k *KeptKeyValue) Made() time.Time { return time.Unix(0, k.made.Load()) }

// Heal is told of an operation's failure: when it may come of the bucket
// being gone, the bucket is looked up in the background and made again
// if it is (the caller's next attempt finds it).
func (k *KeptKeyValue) Heal(err error) {
	k.healer.Heal(err, k.Check)
}

// Check looks the bucket up, makes it again when it is gone, and notes
// when the one in use was made.
func (k *KeptKeyValue) Check(ctx context.Context) {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, err := k.js.KeyValue(ctx, k.cfg.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		if _, err := EnsureKeyValue(ctx, k.js, k.cfg); err != nil {
			k.log.Error("the key-value bucket was deleted and cannot be made again yet", "err", err)
			return
		}
		k.log.Warn("the key-value bucket was deleted; made it again, empty")
	} else if err != nil {
		return // not to be told now: the next check will
	}
	k.noteMade(ctx)
}

// Keep checks the bucket every interval until ctx ends: a bucket made
// again by another process is known here too (Made), and one deleted is
// made again before an operation finds it gone.
func (k *KeptKeyValue) Keep(ctx context.Context, every time.Duration) {
	tick.Every(ctx, every, func() { k.Check(ctx) })
}

func (k *KeptKeyValue) noteMade(ctx context.Context) {
	st, err := k.Status(ctx)
	if err != nil {
		return
	}
	if s, ok := st.(*jetstream.KeyValueBucketStatus); ok {
		k.made.Store(s.StreamInfo().Created.UnixNano())
	}
}
