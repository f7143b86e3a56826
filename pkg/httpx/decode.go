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
	maxBytes := BodyLimit(r)
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBytes+1))
	if err != nil {
		return nil, apperr.UnreadableBody
	}
	if int64(len(body)) > maxBytes {
		return nil, apperr.BodyTooLarge(maxBytes)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, ValidationErrors{{Loc: []any{"body"}, Msg: "Field required", Type: "missing"}}
	}
	return body, nil
}

// DecodeBytes decodes a body read by ReadBody, with DecodeJSON's errors.
func DecodeBytes(body []byte, dst any) error { return apperr.DecodeJSON(body, dst) }
