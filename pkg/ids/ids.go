// Package ids makes resource identifiers: a type prefix and a ULID, so ids
// sort by creation time and cannot be guessed.
package ids

import (
	"crypto/rand"
	"strings"

	"github.com/oklog/ulid/v2"
)

// New returns prefix + "_" + a lowercase ULID, e.g. agent_01jd3…
func New(prefix string) string {
	return prefix + "_" + strings.ToLower(ulid.MustNew(ulid.Now(), rand.Reader).String())
}
