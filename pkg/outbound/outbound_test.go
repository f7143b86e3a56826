package outbound

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

func TestForbiddenAddr(t *testing.T) {
	bad := []string{"127.0.0.1", "10.0.0.1", "172.16.5.4", "192.168.1.1", "100.64.0.1", "169.254.169.254", "169.254.1.1",
		"0.0.0.0", "224.0.0.1", "255.255.255.255", "::1", "::", "fe80::1", "fc00::1", "fd00:ec2::254", "ff02::1",
		"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "64:ff9b::7f00:1", "2002:7f00:1::", "::127.0.0.1",
		// A local NAT64, SIIT and Teredo reach IPv4 behind the network's
		// gateway: the metadata address through a local NAT64 is one.
		"64:ff9b:1::a9fe:a9fe", "::ffff:0:a9fe:a9fe", "2001:0:4136:e378:8000:63bf:3fff:fdd2",
		// Every cloud's credentials endpoints, not only the first one's.
		"169.254.170.2", "169.254.170.23", "fd00:ec2::23", "100.100.100.200"}
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
		{"https://user:secret@example.com/v1", nil, "url_credentials"},
		{"https://token@example.com/v1", nil, "url_credentials"},
		{"https://@example.com/v1", nil, "url_credentials"},
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
		// Numeric forms resolvers read as addresses (all four loopback),
		// whether or not the dotted quad would be allowed.
		{"https://0x7f000001/", nil, "url_parsing"},
		{"https://2130706433/", nil, "url_parsing"},
		{"https://0177.0.0.1/", nil, "url_parsing"},
		{"https://127.1/", nil, "url_parsing"},
		{"https://127.1:8080/", loopback, "url_parsing"},
		{"https://127.0.0.1./", nil, "url_parsing"},
		{"https://0X7F.1/", nil, "url_parsing"},
		{"https://134744072/", nil, "url_parsing"}, // 8.8.8.8, public: still no name
		{"https://hooks.example.0x/", nil, "url_parsing"},
		{"https://8.8.8.8/", nil, ""},
		{"https://1password.com/", nil, ""},
		{"https://api.0x.org/", nil, ""},
		{"https://123.example/", nil, ""},
		{"https://[::1]/", nil, "url_forbidden_address"},
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
	for raw, want := range map[string]string{
		"https://10.0.0.1/":         "URL points to a private address, which webhooks may not reach",
		"https://[::]/":             "URL points to an unspecified address, which webhooks may not reach",
		"https://[::127.0.0.1]/":    "URL points to an IPv4-compatible address, which webhooks may not reach",
		"https://[::ffff:0:a00:1]/": "URL points to an IPv4-translated (SIIT) address, which webhooks may not reach",
	} {
		if _, problem := CheckURL(raw, nil, "webhooks"); problem == nil || problem.Msg != want {
			t.Errorf("%s: %+v, want %q", raw, problem, want)
		}
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
	for _, credentials := range []string{"169.254.170.2:80", "169.254.170.23:80", "[fd00:ec2::23]:80", "100.100.100.200:80",
		"[64:ff9b:1::a9fe:a9fe]:80", "[::ffff:0:a9fe:a9fe]:80"} {
		if err := controlAllowed("tcp", credentials, nil); !IsRefused(err) {
			t.Fatalf("cloud credentials at %s through an allowed name: %v", credentials, err)
		}
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

// The dialer refuses what the save-time check refuses, and its errors
// tell a tenant neither what a name resolved to nor the resolver.
func TestGuardDialsWhatWasChecked(t *testing.T) {
	g := NewGuard([]string{"127.0.0.1"})
	for _, host := range []string{"0x7f000001", "2130706433", "0177.0.0.1", "127.1"} {
		_, err := g.DialContext(context.Background(), "tcp", net.JoinHostPort(host, "1"))
		if !IsRefused(err) {
			t.Errorf("dial %s: %v", host, err)
		}
	}
	_, err := g.DialContext(context.Background(), "tcp", "localhost:1")
	if !IsRefused(err) || strings.Contains(err.Error(), "127.0.0.1") || strings.Contains(err.Error(), "::1") ||
		!strings.Contains(err.Error(), "localhost resolves to a loopback address") {
		t.Errorf("dial localhost: %v", err)
	}
	var refused *RefusedError
	if !errors.As(err, &refused) || refused.Addr == "" {
		t.Errorf("the refused address is kept for operators: %#v", refused)
	}
	_, err = g.DialContext(context.Background(), "tcp", "10.0.0.1:1")
	if !IsRefused(err) || !strings.Contains(err.Error(), "10.0.0.1 is a private address") {
		t.Errorf("dial an address literal: %v", err)
	}
	// A resolver's failure, as the dialer reports it.
	dialErr := &net.OpError{Op: "dial", Net: "tcp", Source: &net.TCPAddr{IP: net.IPv4(10, 1, 1, 1), Port: 4000},
		Addr: &net.TCPAddr{IP: net.IPv4(10, 2, 2, 2), Port: 443},
		Err:  &net.DNSError{Err: "no such host", Name: "hook.example", Server: "10.0.0.53:53", IsNotFound: true}}
	hidden := hideNetwork(dialErr, "hook.example", false)
	var dns *net.DNSError
	if msg := hidden.Error(); strings.Contains(msg, "10.") || !strings.Contains(msg, "hook.example") || !errors.As(hidden, &dns) || !dns.IsNotFound {
		t.Errorf("hidden: %q", msg)
	}
}

// FuzzCheckURL: whatever the URL, an accepted one (no host allowed) has a
// host that is a name (its last label not a number) or an address
// written in full outside every forbidden range.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"https://example.com/", "https://0x7f000001/", "https://127.1/", "https://0177.0.0.1/",
		"https://2130706433/", "https://[::ffff:127.0.0.1]/", "https://127.0.0.1./", "https://a.0x/", "https://1e2/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, problem := CheckURL(raw, nil, "webhooks")
		if problem != nil {
			return
		}
		u, err := url.Parse(got)
		if err != nil {
			t.Fatalf("accepted %q as %q, which does not parse: %v", raw, got, err)
		}
		host := strings.ToLower(u.Hostname())
		if ip, err := netip.ParseAddr(host); err == nil {
			if reason, bad := ForbiddenAddr(ip); bad {
				t.Fatalf("accepted %q: a %s address", raw, reason)
			}
			return
		}
		h := strings.TrimSuffix(host, ".")
		last := h[strings.LastIndexByte(h, '.')+1:]
		if last != "" && strings.Trim(strings.TrimPrefix(last, "0x"), "0123456789abcdef") == "" && (strings.HasPrefix(last, "0x") || strings.Trim(last, "0123456789") == "") {
			t.Fatalf("accepted %q: host %q ends in a number", raw, host)
		}
	})
}
