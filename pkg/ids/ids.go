// Package ids makes resource identifiers: a type prefix and a ULID, so ids
// sort by creation time and cannot be guessed.
package ids

import (
	"crypto/rand"
	"errors"
	"fmt"
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

// MaxLen bounds every identifier a caller may send. Ids travel inside NATS
// subjects (where the server's control line is 4 KiB and one bad line
// closes the connection), message ids and store keys, so the bound is
// checked before any of them is built.
const MaxLen = 128

// ErrMalformed is returned for a string that cannot be an id.
var ErrMalformed = errors.New("malformed id")

// Check reports whether s follows the id grammar: 1 to MaxLen bytes of
// ASCII letters, digits, '_' and '-'. Every id the platform makes
// (prefix_ulid, ws_…, stable hex ids) follows it, and nothing that could
// split, widen or overflow a NATS subject does ('.', '*', '>', spaces,
// control characters, non-ASCII).
func Check(s string) error {
	if s == "" {
		return fmt.Errorf("%w: empty", ErrMalformed)
	}
	if len(s) > MaxLen {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrMalformed, len(s), MaxLen)
	}
	for i := 0; i < len(s); i++ {
		if !idByte[s[i]] {
			return fmt.Errorf("%w: byte %d is not a letter, digit, '_' or '-'", ErrMalformed, i)
		}
	}
	return nil
}

// Valid is Check as a predicate.
func Valid(s string) bool { return Check(s) == nil }

var idByte = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	t['_'], t['-'] = true, true
	return t
}()
