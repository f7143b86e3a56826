package domain

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// SignaturePrefix starts every X-Service-Signature value.
const SignaturePrefix = "sha256="

// Sign returns the X-Service-Signature value of body under secret:
// "sha256=" and the lowercase hex HMAC-SHA256 of the raw body.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return SignaturePrefix + hex.EncodeToString(m.Sum(nil))
}

// Verify checks a signature header value in constant time.
func Verify(secret, body []byte, header string) bool {
	return hmac.Equal([]byte(Sign(secret, body)), []byte(header))
}
