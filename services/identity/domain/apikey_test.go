package domain

import (
	"errors"
	"strings"
	"testing"
)

func TestNormalizePermissions(t *testing.T) {
	if got := NormalizePermissions([]string{"convai_write", "convai_read", "convai_read"}); strings.Join(got, ",") != "convai_read,convai_write" {
		t.Fatalf("%v", got)
	}
	if got := NormalizePermissions([]string{"convai_read", "all"}); len(got) != 1 || got[0] != "all" {
		t.Fatalf("all: %v", got)
	}
}

func TestCanGrant(t *testing.T) {
	if !CanGrant([]string{"all"}, []string{"all"}) || !CanGrant([]string{"convai_read", "convai_write"}, []string{"convai_read"}) {
		t.Fatal("legitimate grant refused")
	}
	if CanGrant([]string{"service_account_write"}, []string{"all"}) || CanGrant([]string{"convai_read"}, []string{"convai_write"}) {
		t.Fatal("escalation allowed")
	}
}

func TestAllowedIPs(t *testing.T) {
	got, err := NormalizeAllowedIPs([]string{"203.0.113.7", "10.1.2.3/8", "2001:db8::1", "::ffff:192.0.2.1"})
	if err != nil || strings.Join(got, ",") != "203.0.113.7/32,10.0.0.0/8,2001:db8::1/128,192.0.2.1/32" {
		t.Fatalf("%v %v", got, err)
	}
	_, err = NormalizeAllowedIPs([]string{"10.0.0.1", "example.com"})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Index != 1 {
		t.Fatalf("bad address: %v", err)
	}
}

func TestSecretsAndHints(t *testing.T) {
	a, b := NewSecret(), NewSecret()
	if a == b || !strings.HasPrefix(a, SecretPrefix) || len(a) != len(SecretPrefix)+48 {
		t.Fatalf("secrets %q %q", a, b)
	}
	h := Hint(a)
	if strings.Contains(h, a[8:len(a)-4]) || !strings.HasSuffix(h, a[len(a)-4:]) {
		t.Fatalf("hint %q reveals too much of %q", h, a)
	}
	if len(HashSecret(a)) != 32 || string(HashSecret(a)) == string(HashSecret(b)) {
		t.Fatal("HashSecret")
	}
}
