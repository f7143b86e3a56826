// Package seal encrypts secrets at rest (webhook signing secrets,
// workspace secrets) with AES-256-GCM under a key derived from the
// deployment secret. Each sealed value is bound to what it belongs to
// (the additional data, e.g. a webhook id): it cannot be moved elsewhere.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
)

// Sealer seals and opens values under one key.
type Sealer struct{ aead cipher.AEAD }

// New returns a sealer for a 32-byte key (runtime.SubKey of the
// deployment secret and a purpose).
func New(key []byte) (*Sealer, error) {
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

// Seal returns nonce || ciphertext of value, bound to owner.
func (s *Sealer) Seal(owner, value string) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return s.aead.Seal(nonce, nonce, []byte(value), []byte(owner)), nil
}

// ErrUnsealable means a sealed value does not open under this key for
// this owner: the deployment secret differs from the one that sealed it.
var ErrUnsealable = errors.New("secret cannot be decrypted (is VOICEAI_SECRET_KEY the same on every process?)")

// Open decrypts a value sealed for owner.
func (s *Sealer) Open(owner string, sealed []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return nil, ErrUnsealable
	}
	out, err := s.aead.Open(nil, sealed[:n], sealed[n:], []byte(owner))
	if err != nil {
		return nil, ErrUnsealable
	}
	return out, nil
}
