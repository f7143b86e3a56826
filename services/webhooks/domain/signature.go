package domain

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
)

// A delivery is signed three ways over the same body bytes, so every
// receiver verifies it with what it has: the spec's X-Service-Signature,
// the official SDK's constructEvent (ElevenLabs-Signature) and Standard
// Webhooks libraries (webhook-id, webhook-timestamp, webhook-signature).
// The first two are keyed with the secret's bytes as written; Standard
// Webhooks with StandardKey(secret).

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

// SignElevenLabs returns the ElevenLabs-Signature value of body sent at
// unix seconds t: "t=<t>,v0=" and the lowercase hex HMAC-SHA256 of
// "<t>.<body>" keyed with the secret's bytes, what the official SDK's
// webhooks.constructEvent(rawBody, header, secret) checks (it refuses a t
// older than 30 minutes).
func SignElevenLabs(secret, body []byte, t int64) string {
	ts := strconv.FormatInt(t, 10)
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return "t=" + ts + ",v0=" + hex.EncodeToString(m.Sum(nil))
}

// SignStandard returns the webhook-signature value of a Standard Webhooks
// delivery: "v1," and the base64 HMAC-SHA256 of "<id>.<t>.<body>" keyed
// with key (StandardKey of the secret).
func SignStandard(key []byte, id string, t int64, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(strconv.FormatInt(t, 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// StandardKey is the Standard Webhooks key of a signing secret. Those
// libraries take a secret "whsec_<base64>" and key with the decoded
// bytes: a secret of that form (every generated one) keys with its
// decoded part, so it is given to them unchanged. Any other secret keys
// with its own bytes: give such a library "whsec_" + base64(secret).
func StandardKey(secret []byte) []byte {
	rest, ok := strings.CutPrefix(string(secret), SecretPrefix)
	if !ok {
		return secret
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil || len(key) == 0 {
		return secret
	}
	return key
}
