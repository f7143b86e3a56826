package cursor

import (
	"strings"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
)

// Scope binds a listing's cursors to its filters: the listing's name, the
// workspace and each filter's value, in a fixed order.
func Scope(parts ...string) string { return strings.Join(parts, "\x1e") }

// After is the position a page starts after: nil for no cursor, and for
// one that does not verify under scope (forged, corrupted, or issued for
// other filters) the one refusal every listing answers, at query.cursor.
func After[P any](c *Codec, scope, raw string) (*P, error) {
	if raw == "" {
		return nil, nil
	}
	var pos P
	if err := c.Decode(scope, raw, &pos); err != nil {
		return nil, apperr.InvalidCursor()
	}
	return &pos, nil
}

// Next is the cursor of the page after one that ended at last, for a
// listing that found more rows after it.
func Next[P any](c *Codec, scope string, last P) (*string, error) {
	next, err := c.Encode(scope, last)
	if err != nil {
		return nil, err
	}
	return &next, nil
}
