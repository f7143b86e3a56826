package domain

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
	"unicode/utf8"
)

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
