// Package keycache keeps every API key the gateway may see in memory, fed
// by the identity key events, so authenticating a request costs a hash
// and a map lookup: no store round trip. Revocations arrive as events and
// take effect as soon as the event does (milliseconds on one cluster).
package keycache

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/netip"
	"sync"
	"time"

	identityv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/identity/v1"

	"github.com/voiceai-platform/voiceai/pkg/applied"
)

// Key is what the gateway knows of one API key.
type Key struct {
	ID          string
	WorkspaceID string
	UserID      string
	Name        string
	hash        [sha256.Size]byte
	Permissions []string
	AllowedIPs  []netip.Prefix // empty = any address
	ExpiresAt   time.Time      // zero = never
	Disabled    bool
	Revoked     bool
	PerMinute   int64 // 0 = the gateway default
	PerHour     int64
}

// Status is the verdict on a presented secret.
type Status int

const (
	Valid Status = iota
	Unknown
	Revoked
	Disabled
	Expired
)

// Cache maps secret hashes to keys.
type Cache struct {
	mu     sync.RWMutex
	byHash map[[sha256.Size]byte]*Key
	byID   map[string]*Key
	users  map[string]User // by user id

	applied applied.Mark // the last stream sequence applied
}

// New returns an empty cache.
func New() *Cache {
	return &Cache{byHash: map[[sha256.Size]byte]*Key{}, byID: map[string]*Key{}, users: map[string]User{}}
}

// Reset empties the cache: the stream it was built from was made anew
// (restored), and keys it no longer holds must not go on working.
func (c *Cache) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.byHash)
	clear(c.byID)
	clear(c.users)
	c.applied.Reset()
}

// Applied records that every event up to seq is applied.
func (c *Cache) Applied(seq uint64) { c.applied.Advance(seq) }

// WaitApplied returns once every event up to seq is applied, or ctx's error.
func (c *Cache) WaitApplied(ctx context.Context, seq uint64) error { return c.applied.Wait(ctx, seq) }

// Authenticate resolves a presented secret. The map is keyed by the
// SHA-256 of the secret, so its lookup timing reveals nothing an attacker
// can steer toward a real secret; the final comparison of the stored hash
// is constant-time all the same.
func (c *Cache) Authenticate(secret string, now time.Time) (Key, Status) {
	h := sha256.Sum256([]byte(secret))
	c.mu.RLock()
	k, ok := c.byHash[h]
	var key Key
	if ok {
		key = *k
	}
	c.mu.RUnlock()
	if !ok || subtle.ConstantTimeCompare(key.hash[:], h[:]) != 1 {
		return Key{}, Unknown
	}
	switch {
	case key.Revoked:
		return key, Revoked
	case key.Disabled:
		return key, Disabled
	case !key.ExpiresAt.IsZero() && !now.Before(key.ExpiresAt):
		return key, Expired
	}
	return key, Valid
}

// AllowsIP reports whether the key may be used from addr.
func (k Key) AllowsIP(addr netip.Addr) bool {
	if len(k.AllowedIPs) == 0 {
		return true
	}
	addr = addr.Unmap()
	for _, p := range k.AllowedIPs {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// User is who a key acts as.
type User struct{ Name, Email string }

// User returns what is known of a user.
func (c *Cache) User(userID string) User {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.users[userID]
}

// PutKey installs the state of a key (from any key event).
func (c *Cache) PutKey(s *identityv1.ApiKey) {
	k := &Key{
		ID: s.GetKeyId(), WorkspaceID: s.GetWorkspaceId(), UserID: s.GetServiceAccountUserId(), Name: s.GetName(),
		Permissions: s.GetPermissions(), Disabled: s.GetIsDisabled(), Revoked: s.RevokedAtUnix != nil,
		PerMinute: s.GetRateLimitPerMinute(), PerHour: s.GetRateLimitPerHour(),
	}
	copy(k.hash[:], s.GetSecretSha256())
	if s.ExpiresAtUnix != nil {
		k.ExpiresAt = time.Unix(s.GetExpiresAtUnix(), 0)
	}
	for _, ip := range s.GetAllowedIps() {
		if p, err := netip.ParsePrefix(ip); err == nil {
			k.AllowedIPs = append(k.AllowedIPs, p)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.byID[k.ID]; ok {
		delete(c.byHash, old.hash)
	}
	c.byID[k.ID] = k
	c.byHash[k.hash] = k
}

// PutAccount records a service account's name and e-mail.
func (c *Cache) PutAccount(s *identityv1.ServiceAccount) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.users[s.GetUserId()] = User{Name: s.GetName(), Email: s.GetEmail()}
}

// Len is the number of keys known.
func (c *Cache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.byID)
}
