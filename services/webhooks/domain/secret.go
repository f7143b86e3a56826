package domain

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
	"unicode/utf8"
)

// SecretPrefix starts every generated secret, as Standard Webhooks
// secrets start.
const SecretPrefix = "whsec_"

// NewSecret generates a signing secret: "whsec_" and 32 random bytes in
// standard base64, the form Standard Webhooks libraries take as it is.
func NewSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(b[:]), nil
}

// SecretHint shows the first characters of a secret after its "whsec_"
// prefix (which tells nothing): at most four, and at most a quarter of it.
func SecretHint(secret string) string {
	prefix, rest := "", secret
	if r, ok := strings.CutPrefix(secret, SecretPrefix); ok {
		prefix, rest = SecretPrefix, r
	}
	n := min(4, utf8.RuneCountInString(rest)/4)
	if n == 0 {
		return prefix + "…"
	}
	return prefix + string([]rune(rest)[:n]) + "…"
}
