package keycache

import (
	"crypto/sha256"
	"net/netip"
	"testing"
	"time"

	identityv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/identity/v1"
)

func hash(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

func key(secret string, mutate func(*identityv1.ApiKey)) *identityv1.ApiKey {
	k := &identityv1.ApiKey{KeyId: "key_1", WorkspaceId: "ws", ServiceAccountUserId: "sa_1", SecretSha256: hash(secret), Permissions: []string{"convai_read"}}
	if mutate != nil {
		mutate(k)
	}
	return k
}

func TestAuthenticate(t *testing.T) {
	now := time.Unix(1000, 0)
	c := New()
	c.PutKey(key("s1", nil))
	c.PutAccount(&identityv1.ServiceAccount{UserId: "sa_1", Name: "bot", Email: "bot@x"})
	if k, st := c.Authenticate("s1", now); st != Valid || k.WorkspaceID != "ws" || c.User("sa_1").Email != "bot@x" {
		t.Fatalf("valid: %v %+v", st, k)
	}
	if _, st := c.Authenticate("s2", now); st != Unknown {
		t.Fatalf("unknown: %v", st)
	}
	c.PutKey(key("s1", func(k *identityv1.ApiKey) { k.IsDisabled = true }))
	if _, st := c.Authenticate("s1", now); st != Disabled {
		t.Fatalf("disabled: %v", st)
	}
	exp := int64(1000)
	c.PutKey(key("s1", func(k *identityv1.ApiKey) { k.ExpiresAtUnix = &exp }))
	if _, st := c.Authenticate("s1", now); st != Expired {
		t.Fatalf("expired at its instant: %v", st)
	}
	if _, st := c.Authenticate("s1", now.Add(-time.Second)); st != Valid {
		t.Fatalf("before expiry: %v", st)
	}
	c.PutKey(key("s1", func(k *identityv1.ApiKey) { k.RevokedAtUnix = &exp }))
	if _, st := c.Authenticate("s1", now); st != Revoked {
		t.Fatalf("revoked: %v", st)
	}
	// A new hash for the same key id retires the old secret.
	c.PutKey(key("rotated", nil))
	if _, st := c.Authenticate("s1", now); st != Unknown {
		t.Fatalf("old secret after rotation: %v", st)
	}
	if _, st := c.Authenticate("rotated", now); st != Valid || c.Len() != 1 {
		t.Fatalf("rotated: %v len %d", st, c.Len())
	}
}

func TestAllowsIP(t *testing.T) {
	c := New()
	c.PutKey(key("s", func(k *identityv1.ApiKey) { k.AllowedIps = []string{"10.0.0.0/8", "2001:db8::/32"} }))
	k, _ := c.Authenticate("s", time.Now())
	for addr, want := range map[string]bool{"10.1.2.3": true, "::ffff:10.1.2.3": true, "11.0.0.1": false, "2001:db8::7": true, "::1": false} {
		if got := k.AllowsIP(netip.MustParseAddr(addr)); got != want {
			t.Errorf("%s: %v, want %v", addr, got, want)
		}
	}
	if !(Key{}).AllowsIP(netip.MustParseAddr("192.0.2.1")) {
		t.Error("a key without allowed_ips allows every address")
	}
}
