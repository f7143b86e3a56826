// Package domain holds the identity rules: workspaces, service accounts
// and their API keys. State is the proto message carried by the
// state-carrying events; this package decides what a valid change is.
package domain

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	identityv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/identity/v1"

	"github.com/voiceai-platform/voiceai/pkg/permission"
)

// DefaultWorkspaceID is the workspace created on first start.
const DefaultWorkspaceID = "ws_default"

// AdminAccountID is the service account that owns bootstrap keys.
const AdminAccountID = "sa_admin"

// SecretPrefix starts every generated key, so leaked keys are greppable.
const SecretPrefix = "vak_"

// MinConfiguredSecretLen is the shortest admin key an operator may
// configure (VOICEAI_BOOTSTRAP_ADMIN_KEY): 32 characters, 128 bits as hex.
// Requests with unknown keys are not limited (a limit per address would
// lock out honest users behind one NAT), so a key must not be guessable.
const MinConfiguredSecretLen = 32

// CheckConfiguredSecret refuses a configured admin key too short to be
// safe from guessing.
func CheckConfiguredSecret(s string) error {
	if n := len(s); n < MinConfiguredSecretLen {
		return fmt.Errorf("VOICEAI_BOOTSTRAP_ADMIN_KEY is %d characters; an admin key must have at least %d (e.g. openssl rand -hex 24)", n, MinConfiguredSecretLen)
	}
	return nil
}

// NewSecret returns a fresh high-entropy key secret.
func NewSecret() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return SecretPrefix + hex.EncodeToString(b[:])
}

// HashSecret is what we store: SHA-256 is right for random 192-bit
// secrets (no dictionary to defend against), and fast enough to check on
// every request.
func HashSecret(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// Hint shows enough of a secret to recognise it, never enough to use it:
// at most a quarter of it at each end (8 and 4 characters of a generated
// key), so a short operator-configured secret is not listed in full.
func Hint(secret string) string {
	if len(secret) <= 8 {
		return strings.Repeat("*", len(secret))
	}
	head, tail := min(len(secret)/4, 8), min(len(secret)/4, 4)
	return secret[:head] + "…" + secret[len(secret)-tail:]
}

// ErrInvalid wraps every rule violation; the message names the field.
var ErrInvalid = errors.New("invalid")

// FieldError is a rule violation of one input field.
type FieldError struct {
	Field string
	Index int // element index within the field, or -1
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }
func (e *FieldError) Unwrap() error { return ErrInvalid }

// NormalizePermissions returns perms sorted without repeats, or ["all"]
// when they hold it. That a key holds at least one permission, and only
// names the platform knows, is the API schema's (Permissions).
func NormalizePermissions(perms []string) []string {
	if slices.Contains(perms, permission.All) {
		return []string{permission.All}
	}
	out := slices.Clone(perms)
	slices.Sort(out)
	return slices.Compact(out)
}

// CanGrant reports whether a caller holding held may hand out perms: no
// key can mint a key more powerful than itself.
func CanGrant(held, perms []string) bool {
	if slices.Contains(held, permission.All) {
		return true
	}
	for _, p := range perms {
		if !slices.Contains(held, p) {
			return false
		}
	}
	return true
}

// NormalizeAllowedIPs parses IPs and CIDR ranges into canonical prefixes.
func NormalizeAllowedIPs(ips []string) ([]string, error) {
	out := make([]string, 0, len(ips))
	for i, s := range ips {
		p, err := ParseIPOrPrefix(s)
		if err != nil {
			return nil, &FieldError{Field: "allowed_ips", Index: i, Msg: fmt.Sprintf("%q is not an IP address or CIDR range", s)}
		}
		out = append(out, p.String())
	}
	return out, nil
}

// ParseIPOrPrefix accepts "203.0.113.7", "2001:db8::1" or "10.0.0.0/8".
func ParseIPOrPrefix(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err == nil && p.Addr().Is4In6() && p.Bits() >= 96 {
			// Clients are matched by their unmapped address, so an
			// IPv4-mapped range is stored as the IPv4 range it means.
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		return p.Masked(), err
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
}

// KeyIsLive reports whether a key can still authenticate (ignoring expiry,
// which depends on the clock).
func KeyIsLive(k *identityv1.ApiKey) bool {
	return k.RevokedAtUnix == nil && !k.IsDisabled
}

// WithinAllowedIPs reports whether every range of ips lies inside one of
// bounds (stored forms, NormalizeAllowedIPs's): a key restricted to bounds
// may give only narrower restrictions. An empty ips, no restriction at
// all, lies within no bounds but none.
func WithinAllowedIPs(ips, bounds []string) bool {
	if len(bounds) == 0 {
		return true
	}
	if len(ips) == 0 {
		return false
	}
	for _, s := range ips {
		p, err := ParseIPOrPrefix(s)
		if err != nil {
			return false
		}
		inside := false
		for _, b := range bounds {
			if bp, err := ParseIPOrPrefix(b); err == nil && bp.Bits() <= p.Bits() && bp.Contains(p.Addr()) {
				inside = true
				break
			}
		}
		if !inside {
			return false
		}
	}
	return true
}
