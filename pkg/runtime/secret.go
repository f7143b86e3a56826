package runtime

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// SubKey derives a purpose-specific key from the deployment secret, so one
// VOICEAI_SECRET_KEY serves cursors, webhook secrets and the rest without
// any two uses sharing a key.
func SubKey(secret, purpose string) []byte {
	h := sha256.Sum256([]byte("voiceai/" + purpose + "\x00" + secret))
	return h[:]
}

// LoadOrCreateSecret returns the secret stored in path, creating it (mode
// 0600) with 32 random bytes on first use. The embedded stack uses it
// when VOICEAI_SECRET_KEY is not set.
func LoadOrCreateSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		if s := strings.TrimSpace(string(b)); s != "" {
			return s, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	s := hex.EncodeToString(raw[:])
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(path, []byte(s+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return s, nil
}
