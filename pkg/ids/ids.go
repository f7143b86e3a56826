// Package ids makes resource identifiers: a type prefix and a ULID, so ids
// sort by creation time and cannot be guessed.
package ids

import (
	"crypto/rand"
	"strings"
	"sync"

	"github.com/oklog/ulid/v2"
)

var (
	mu      sync.Mutex
	entropy = ulid.Monotonic(rand.Reader, 0)
)

// New returns prefix + "_" + a lowercase ULID, e.g. agent_01jd3…; ids made
// by one process are strictly increasing, even within a millisecond.
func New(prefix string) string {
	mu.Lock()
	id := ulid.MustNew(ulid.Now(), entropy)
	mu.Unlock()
	return prefix + "_" + strings.ToLower(id.String())
}
