package httpx

import (
	"bytes"
	"io"
	"net/http"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
)

// DefaultMaxBody bounds a request body when a service sets no other limit.
const DefaultMaxBody = 1 << 20

// DecodeJSON reads r's body (at most maxBytes) into dst. Malformed JSON is
// a 400; a value of the wrong type is a 422 pointing at the field; an
// oversized body is a 413. Unknown fields are ignored, as the public SDK
// strips nothing it does not know and clients may be newer than we are.
func DecodeJSON(r *http.Request, maxBytes int64, dst any) error {
	body, err := ReadBody(r, maxBytes)
	if err != nil {
		return err
	}
	return apperr.DecodeJSON(body, dst)
}

// ReadBody reads r's body (at most maxBytes; 413 beyond, 422 when empty)
// for handlers that decode it more than once.
func ReadBody(r *http.Request, maxBytes int64) ([]byte, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBody
	}
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
