package httpx

import (
	"bytes"
	"context"
	"io"
	"net/http"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
)

// DefaultMaxBody bounds a request body where its operation sets no other
// limit.
const DefaultMaxBody = 1 << 20

type bodyLimitKey struct{}

// WithBodyLimit is r with the largest body its handler reads (its
// operation's); n <= 0 leaves the default.
func WithBodyLimit(r *http.Request, n int64) *http.Request {
	if n <= 0 {
		return r
	}
	return r.WithContext(ContextWithBodyLimit(r.Context(), n))
}

// ContextWithBodyLimit is ctx carrying a request's body limit, for the
// router that builds the request's context in one step.
func ContextWithBodyLimit(ctx context.Context, n int64) context.Context {
	if n <= 0 {
		return ctx
	}
	return context.WithValue(ctx, bodyLimitKey{}, n)
}

// BodyLimit is the largest body r's handler reads: WithBodyLimit's, else
// DefaultMaxBody.
func BodyLimit(r *http.Request) int64 {
	if n, ok := r.Context().Value(bodyLimitKey{}).(int64); ok {
		return n
	}
	return DefaultMaxBody
}

// DecodeJSON reads r's body (at most BodyLimit(r)) into dst. Malformed
// JSON is a 400; a value of the wrong type is a 422 pointing at the
// field; an oversized body is a 413. Unknown fields are ignored, as the
// public SDK strips nothing it does not know and clients may be newer
// than we are.
func DecodeJSON(r *http.Request, dst any) error {
	body, err := ReadBody(r)
	if err != nil {
		return err
	}
	return apperr.DecodeJSON(body, dst)
}

// ReadBody reads r's body (at most BodyLimit(r); 413 beyond, 422 when
// empty) for handlers that decode it more than once.
func ReadBody(r *http.Request) ([]byte, error) {
	body, err := ReadBodyAsSent(r.Body, BodyLimit(r))
	if err != nil {
		return nil, err
	}
	return body, nil
}

// ReadBodyAsSent reads body up to one byte beyond limit, and says what
// ReadBody would of it: unreadable, too large (413), empty (422). What
// it read is returned whatever it says, for a fingerprint of the
// request as it was sent.
func ReadBodyAsSent(body io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(body, limit+1))
	switch {
	case err != nil:
		return b, apperr.UnreadableBody
	case int64(len(b)) > limit:
		return b, apperr.BodyTooLarge(limit)
	case len(bytes.TrimSpace(b)) == 0:
		return b, ValidationErrors{{Loc: []any{"body"}, Msg: "Field required", Type: "missing"}}
	}
	return b, nil
}

// DecodeBytes decodes a body read by ReadBody, with DecodeJSON's errors.
func DecodeBytes(body []byte, dst any) error { return apperr.DecodeJSON(body, dst) }
