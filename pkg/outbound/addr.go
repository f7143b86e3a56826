// Package outbound decides which destinations the platform's outbound
// calls (webhook deliveries, agents' own model endpoints) may reach: never
// a loopback, private, link-local or cloud-metadata address unless the
// operator allowed its host, never cloud metadata at all; checked on the
// URL when it is configured and again on every resolved address at
// connect time.
package outbound

import (
	"net/netip"
)

type blockedRange struct {
	prefix netip.Prefix
	reason string
}

var blocked = func() []blockedRange {
	list := []struct{ cidr, reason string }{
		// First: within wider ranges below, they are told apart as what
		// no allow-list opens (IsMetadata).
		{"169.254.169.254/32", "cloud metadata"},
		{"169.254.170.2/32", "cloud metadata"},   // AWS ECS task credentials
		{"169.254.170.23/32", "cloud metadata"},  // AWS EKS Pod Identity
		{"100.100.100.200/32", "cloud metadata"}, // Alibaba Cloud
		{"fd00:ec2::254/128", "cloud metadata"},
		{"fd00:ec2::23/128", "cloud metadata"}, // AWS EKS Pod Identity
		{"0.0.0.0/8", "unspecified"},
		{"127.0.0.0/8", "loopback"},
		{"10.0.0.0/8", "private"},
		{"172.16.0.0/12", "private"},
		{"192.168.0.0/16", "private"},
		{"100.64.0.0/10", "carrier-grade NAT"},
		{"169.254.0.0/16", "link-local"},
		{"192.0.0.0/24", "IETF protocol assignments"},
		{"198.18.0.0/15", "benchmarking"},
		{"224.0.0.0/4", "multicast"},
		{"240.0.0.0/4", "reserved"},
		{"::/128", "unspecified"},
		{"::1/128", "loopback"},
		{"::/96", "IPv4-compatible"},
		// Translations that reach IPv4 by a gateway of the local network:
		// whatever IPv4 address they carry, no public receiver uses them.
		{"64:ff9b:1::/48", "local-use NAT64"},
		{"::ffff:0:0:0/96", "IPv4-translated (SIIT)"},
		{"2001::/32", "Teredo"},
		{"fc00::/7", "private (unique local)"},
		{"fe80::/10", "link-local"},
		{"fec0::/10", "site-local"},
		{"ff00::/8", "multicast"},
		{"100::/64", "discard"},
		{"2001:db8::/32", "documentation"},
	}
	out := make([]blockedRange, 0, len(list))
	for _, l := range list {
		out = append(out, blockedRange{netip.MustParsePrefix(l.cidr), l.reason})
	}
	return out
}()

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
	// Refused whatever they carry, but what they carry in their last 32
	// bits is told too: cloud metadata is refused even to an allowed host.
	localNAT64 = netip.MustParsePrefix("64:ff9b:1::/48")
	siit       = netip.MustParsePrefix("::ffff:0:0:0/96")
)

// ForbiddenAddr reports whether an outbound call may not connect to ip,
// and why:
// loopback, private, link-local, carrier-grade NAT, cloud metadata,
// unspecified, multicast and reserved ranges, including IPv4 addresses
// embedded in IPv6 (IPv4-mapped, NAT64, 6to4).
func ForbiddenAddr(ip netip.Addr) (reason string, forbidden bool) {
	if !ip.IsValid() {
		return "invalid address", true
	}
	ip = ip.WithZone("")
	if ip.Is4In6() {
		return ForbiddenAddr(ip.Unmap())
	}
	if ip.Is6() {
		b := ip.As16()
		if nat64.Contains(ip) {
			return ForbiddenAddr(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
		}
		if sixToFour.Contains(ip) {
			return ForbiddenAddr(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
		}
		if localNAT64.Contains(ip) || siit.Contains(ip) {
			if IsMetadata(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})) {
				return "cloud metadata", true
			}
		}
	}
	if ip == netip.IPv4Unspecified() || ip.Is4() && ip.As4() == [4]byte{255, 255, 255, 255} {
		return "unspecified or broadcast", true
	}
	for _, r := range blocked {
		if r.prefix.Contains(ip) {
			return r.reason, true
		}
	}
	return "", false
}

// IsMetadata reports whether ip is a cloud metadata address, in any of
// its IPv6 embeddings: refused even to a host the operator allowed (an
// allow-list entry meant for a local test receiver must not open the
// instance's credentials).
func IsMetadata(ip netip.Addr) bool {
	reason, bad := ForbiddenAddr(ip)
	return bad && reason == "cloud metadata"
}
