package testkit

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// SignedBy reports whether header (X-Service-Signature) signs body with
// secret as the spec says: "sha256=" and the hex HMAC-SHA256 of the raw
// body. Tests check deliveries with this reference, written apart from
// the signer it checks.
func SignedBy(secret, body []byte, header string) bool {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return hmac.Equal([]byte("sha256="+hex.EncodeToString(m.Sum(nil))), []byte(header))
}
