package runner

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/eventstore"
)

// ResponseCache keeps model answers by key. A cache that fails is a miss:
// it must never fail a run.
type ResponseCache interface {
	Get(ctx context.Context, key string) ([]byte, bool)
	Put(ctx context.Context, key string, value []byte)
}

// ModelCacheBucket is the JetStream key-value bucket every runner shares
// for cached model answers.
const ModelCacheBucket = "testing_model_cache"

// KVCache is a ResponseCache in a JetStream key-value bucket: every runner
// reaches it, and entries expire after the bucket's TTL.
type KVCache struct {
	KV  jetstream.KeyValue
	Log *slog.Logger
}

// OpenKVCache creates or updates the bucket with ttl and returns the cache.
// The last runner to start sets the TTL: give every runner the same one.
func OpenKVCache(ctx context.Context, js jetstream.JetStream, ttl time.Duration, replicas int, log *slog.Logger) (*KVCache, error) {
	kv, err := eventstore.EnsureKeyValue(ctx, js, jetstream.KeyValueConfig{
		Bucket: ModelCacheBucket, Description: "model answers of test runs that asked for caching",
		TTL: ttl, Replicas: max(replicas, 1), Storage: jetstream.FileStorage,
	})
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
			c.Log.WarnContext(ctx, "runner: model cache read failed", "err", err)
		}
		return nil, false
	}
	return e.Value(), true
}

// Put writes an entry.
func (c *KVCache) Put(ctx context.Context, key string, value []byte) {
	if _, err := c.KV.Put(ctx, key, value); err != nil {
		c.Log.WarnContext(ctx, "runner: model cache write failed", "err", err)
	}
}

// cacheScope is one run's use of the cache. The key of a request is the
// hash of the provider, the request's whole identity (endpoint, model and
// body), the run's repeat index (repeats of a test stay independent
// samples) and how many identical requests the run made before it (a
// re-judged verdict is a new sample, not the first one again).
type cacheScope struct {
	store    ResponseCache
	provider string
	repeat   int

	mu   sync.Mutex
	seen map[[sha256.Size]byte]int
}

func newCacheScope(store ResponseCache, provider string, repeat int) *cacheScope {
	return &cacheScope{store: store, provider: provider, repeat: repeat, seen: map[[sha256.Size]byte]int{}}
}

func (s *cacheScope) key(identity []byte) string {
	req := sha256.Sum256(identity)
	s.mu.Lock()
	nth := s.seen[req]
	s.seen[req]++
	s.mu.Unlock()
	h := sha256.New()
	h.Write([]byte(s.provider + "\x00"))
	h.Write(req[:])
	h.Write(binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, uint64(s.repeat)), uint64(nth)))
	return hex.EncodeToString(h.Sum(nil))
}
