package adapters

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/eventstore"
)

// ModelCacheBucket is the JetStream key-value bucket every runner shares
// for cached model answers.
const ModelCacheBucket = "testing_model_cache"

// KVCache is a model.ResponseCache (the model clients' answers) in a
// JetStream key-value bucket: every runner reaches it, and entries expire
// after the bucket's TTL. Deleted, the bucket is made again, empty, by
// the first read or write that finds it gone.
type KVCache struct {
	KV  *eventstore.KeptKeyValue
	Log *slog.Logger
}

// OpenKVCache creates or updates the bucket with ttl and returns the cache.
// The last runner to start sets the TTL: give every runner the same one.
func OpenKVCache(ctx context.Context, js jetstream.JetStream, ttl time.Duration, replicas int, log *slog.Logger) (*KVCache, error) {
	kv, err := eventstore.KeepKeyValue(ctx, js, jetstream.KeyValueConfig{
		Bucket: ModelCacheBucket, Description: "model answers of test runs that asked for caching",
		TTL: ttl, Replicas: max(replicas, 1), Storage: jetstream.FileStorage,
	}, log)
	if err != nil {
		return nil, err
	}
	return &KVCache{KV: kv, Log: log}, nil
}

// Get reads an entry.
func (c *KVCache) Get(ctx context.Context, key string) ([]byte, bool) {
	e, err := c.KV.Get(ctx, key)
	if err != nil {
		if !errors.Is(err, jetstream.ErrKeyNotFound) {
			c.KV.Heal(err)
			c.Log.WarnContext(ctx, "runner: model cache read failed", "err", err)
		}
		return nil, false
	}
	return e.Value(), true
}

// Put writes an entry.
func (c *KVCache) Put(ctx context.Context, key string, value []byte) {
	if _, err := c.KV.Put(ctx, key, value); err != nil {
		c.KV.Heal(err)
		c.Log.WarnContext(ctx, "runner: model cache write failed", "err", err)
	}
}
