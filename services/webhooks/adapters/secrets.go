// Package adapters joins the webhooks service to JetStream and Mongo: the
// stream configurations, the in-memory webhook registry and delivery log
// fed by streams, the sealed secrets, and the Mongo read models.
package adapters

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"unicode/utf8"
)

// Sealer encrypts webhook secrets at rest with AES-256-GCM under a key
// derived from the deployment secret (runtime.SubKey(secret,
// "webhooks/signing-secrets")). The webhook id is the additional data, so
// a sealed secret cannot be moved to another webhook.
type Sealer struct{ aead cipher.AEAD }

// NewSealer returns a sealer for a 32-byte key.
func NewSealer(key []byte) (*Sealer, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

// Seal returns nonce || ciphertext of secret, bound to webhookID.
func (s *Sealer) Seal(webhookID, secret string) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return s.aead.Seal(nonce, nonce, []byte(secret), []byte(webhookID)), nil
}

// ErrUnsealable means a sealed secret does not open under this key: the
// deployment secret differs from the one that sealed it.
var ErrUnsealable = errors.New("webhook secret cannot be decrypted (is VOICEAI_SECRET_KEY the same on every replica?)")

// Open decrypts a sealed secret.
func (s *Sealer) Open(webhookID string, sealed []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return nil, ErrUnsealable
	}
	out, err := s.aead.Open(nil, sealed[:n], sealed[n:], []byte(webhookID))
	if err != nil {
		return nil, ErrUnsealable
	}
	return out, nil
}

// NewSecret generates a signing secret: "whsec_" and 32 random bytes in
// base64url.
func NewSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "whsec_" + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// SecretHint shows the first characters of a secret after its "whsec_"
// prefix (which tells nothing): at most four, and at most a quarter of it.
func SecretHint(secret string) string {
	prefix, rest := "", secret
	if r, ok := strings.CutPrefix(secret, "whsec_"); ok {
		prefix, rest = "whsec_", r
	}
	n := min(4, utf8.RuneCountInString(rest)/4)
	if n == 0 {
		return prefix + "…"
	}
	return prefix + string([]rune(rest)[:n]) + "…"
}
