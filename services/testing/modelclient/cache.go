package modelclient

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"sync"

	"github.com/voiceai-platform/voiceai/services/testing/model"
)

// cacheScope is one run's use of the cache. The key of a request is the
// hash of the provider, the request's whole identity (endpoint, model and
// body), the run's repeat index (repeats of a test stay independent
// samples) and how many identical requests the run made before it (a
// re-judged verdict is a new sample, not the first one again).
type cacheScope struct {
	store    model.ResponseCache
	provider string
	repeat   int

	mu   sync.Mutex
	seen map[[sha256.Size]byte]int
}

func newCacheScope(store model.ResponseCache, provider string, repeat int) *cacheScope {
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
