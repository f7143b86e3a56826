package outbound

import (
	"context"
	"net/netip"
	"testing"
)

func TestForbiddenAddr(t *testing.T) {
	bad := []string{"127.0.0.1", "10.0.0.1", "172.16.5.4", "192.168.1.1", "100.64.0.1", "169.254.169.254", "169.254.1.1",
		"0.0.0.0", "224.0.0.1", "255.255.255.255", "::1", "::", "fe80::1", "fc00::1", "fd00:ec2::254", "ff02::1",
		"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "64:ff9b::7f00:1", "2002:7f00:1::", "::127.0.0.1"}
	for _, s := range bad {
		if _, forbidden := ForbiddenAddr(netip.MustParseAddr(s)); !forbidden {
			t.Errorf("%s allowed", s)
		}
	}
	for _, s := range []string{"93.184.216.34", "8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8"} {
		if reason, forbidden := ForbiddenAddr(netip.MustParseAddr(s)); forbidden {
			t.Errorf("%s refused as %s", s, reason)
		}
	}
}

func TestCheckURL(t *testing.T) {
	loopback := func(h string) bool { return h == "127.0.0.1" || h == "169.254.169.254" }
	for _, tc := range []struct {
		raw     string
		allowed func(string) bool
		typ     string // "" for accepted
	}{
		{"https://example.com/v1/chat#frag", nil, ""},
		{"http://127.0.0.1:8080/v1", loopback, ""},
		{"http://127.0.0.1:8080/v1", nil, "url_scheme"},
		{"https://127.0.0.1/v1", nil, "url_forbidden_address"},
		{"https://169.254.169.254/latest/meta-data", nil, "url_forbidden_address"},
		{"http://169.254.169.254/latest/meta-data", loopback, "url_scheme"}, // the guard never allows metadata
		{"https://169.254.169.254/latest/meta-data", func(string) bool { return true }, "url_forbidden_address"},
		{"https://[::ffff:169.254.169.254]/", func(string) bool { return true }, "url_forbidden_address"},
		{"file:///etc/passwd", loopback, "url_parsing"},
		{"ftp://example.com/", nil, "url_scheme"},
		{" https://example.com", nil, "url_parsing"},
		{"example.com/v1", nil, "url_parsing"},
	} {
		allowed := tc.allowed
		if tc.raw == "http://169.254.169.254/latest/meta-data" {
			allowed = NewGuard([]string{"127.0.0.1", "169.254.169.254"}).HostAllowed
		}
		got, problem := CheckURL(tc.raw, allowed, "agent endpoints")
		switch {
		case tc.typ == "" && problem != nil:
			t.Errorf("%s refused: %+v", tc.raw, problem)
		case tc.typ != "" && (problem == nil || problem.Type != tc.typ):
			t.Errorf("%s: got %q %+v, want %s", tc.raw, got, problem, tc.typ)
		}
	}
	if got, _ := CheckURL("https://example.com/v1#x", nil, "webhooks"); got != "https://example.com/v1" {
		t.Fatal(got)
	}
}

func TestGuardNeverAllowsMetadata(t *testing.T) {
	g := NewGuard([]string{"127.0.0.1", "169.254.169.254", "metadata.internal"})
	if !g.HostAllowed("127.0.0.1") || g.HostAllowed("169.254.169.254") || g.HostAllowed("::ffff:169.254.169.254") {
		t.Fatal("allow-list")
	}
	// An allowed name is dialled with the metadata check still on.
	if err := controlAllowed("tcp4", "169.254.169.254:80", nil); !IsRefused(err) {
		t.Fatalf("metadata through an allowed name: %v", err)
	}
	if err := controlAllowed("tcp4", "127.0.0.1:80", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := g.DialContext(context.Background(), "tcp", "169.254.169.254:80"); !IsRefused(err) {
		t.Fatalf("dial: %v", err)
	}
}

func TestEnvJoinsBothNames(t *testing.T) {
	e := Env{AllowHosts: "a.internal, 10.0.0.5", LegacyAllowHosts: "127.0.0.1"}
	g := NewGuard(e.Hosts())
	for _, h := range []string{"a.internal", "10.0.0.5", "127.0.0.1"} {
		if !g.HostAllowed(h) {
			t.Errorf("%s not allowed", h)
		}
	}
}
