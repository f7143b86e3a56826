// Package cursor makes opaque, tamper-evident pagination cursors. A cursor
// is base64url(payload || HMAC-SHA256(key, scope || payload)[:16]) where
// scope binds it to the listing and filters it was issued for: a forged,
// corrupted, or re-used-with-other-filters cursor is rejected.
package cursor

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
)

const macLen = 16

// ErrInvalid is returned for any cursor that does not verify.
var ErrInvalid = errors.New("cursor is invalid or was issued for other filters")

// Codec signs and verifies cursors with one key.
type Codec struct{ key []byte }

// NewCodec returns a codec keyed with key (any length; 32 random bytes is
// right for production).
func NewCodec(key []byte) *Codec { return &Codec{key: append([]byte(nil), key...)} }

// Encode serialises position (any JSON value) for scope.
func (c *Codec) Encode(scope string, position any) (string, error) {
	payload, err := json.Marshal(position)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(append(payload, c.mac(scope, payload)...)), nil
}

// Decode verifies s for scope and unmarshals its position into dst.
func (c *Codec) Decode(scope, s string, dst any) error {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) <= macLen {
		return ErrInvalid
	}
	payload, mac := raw[:len(raw)-macLen], raw[len(raw)-macLen:]
	if !hmac.Equal(mac, c.mac(scope, payload)) {
		return ErrInvalid
	}
	if err := json.Unmarshal(payload, dst); err != nil {
		return ErrInvalid
	}
	return nil
}

func (c *Codec) mac(scope string, payload []byte) []byte {
	h := hmac.New(sha256.New, c.key)
	h.Write([]byte(scope))
	h.Write([]byte{0})
	h.Write(payload)
	return h.Sum(nil)[:macLen]
}
