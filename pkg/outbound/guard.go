package outbound

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// Guard decides which destinations outbound calls may reach. Every address a
// connection is about to use is checked in the dialer's Control hook,
// after DNS resolution, so a name that resolves (or re-resolves) to a
// private address is refused: no DNS rebinding.
type Guard struct {
	hosts map[string]bool
}

// NewGuard allows the given hosts (names or IP literals, case-insensitive,
// e.g. from VOICEAI_OUTBOUND_ALLOW_HOSTS) to be private and to be reached
// over plain http. Cloud metadata addresses stay refused whatever the list
// says.
func NewGuard(allowHosts []string) *Guard {
	g := &Guard{hosts: map[string]bool{}}
	for _, h := range allowHosts {
		h = strings.ToLower(strings.TrimSpace(h))
		h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
		if h != "" {
			g.hosts[h] = true
		}
	}
	return g
}

// ParseAllowHosts splits a comma-separated allow list.
func ParseAllowHosts(s string) []string {
	var out []string
	for _, h := range strings.Split(s, ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}

// HostAllowed reports whether the operator allowed host.
func (g *Guard) HostAllowed(host string) bool {
	if g == nil {
		return false
	}
	host = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if ip, err := netip.ParseAddr(host); err == nil {
		return !IsMetadata(ip) && (g.hosts[host] || g.hosts[ip.Unmap().String()])
	}
	return g.hosts[host]
}

// RefusedError is a destination the guard does not allow.
type RefusedError struct {
	Addr   string // the address refused (for operators: not in Error)
	Reason string
	// Host is the URL's host when it is a name: the error then says the
	// name resolves to such an address, not which address (a tenant
	// learns nothing of the network it probed).
	Host string
}

func (e *RefusedError) Error() string {
	if e.Host != "" {
		return fmt.Sprintf("destination refused: %s resolves to a %s address", e.Host, e.Reason)
	}
	return fmt.Sprintf("destination refused: %s is a %s address", e.Addr, e.Reason)
}

// control runs just before each connect, on the resolved address.
func control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &RefusedError{Addr: address, Reason: "unparseable"}
	}
	if reason, bad := ForbiddenAddr(ap.Addr()); bad {
		return &RefusedError{Addr: ap.Addr().String(), Reason: reason}
	}
	return nil
}

// controlAllowed runs before each connect to an allowed host: only cloud
// metadata is refused (an allowed name may still resolve to it).
func controlAllowed(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &RefusedError{Addr: address, Reason: "unparseable"}
	}
	if IsMetadata(ap.Addr()) {
		return &RefusedError{Addr: ap.Addr().String(), Reason: "cloud metadata"}
	}
	return nil
}

// DialContext dials addr ("host:port" of the URL), checking every
// resolved address unless the host is allowed.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	// What is dialled is checked as the URL was: a numeric form some
	// resolvers read as an address is no name (a URL stored before the
	// save-time check refused it).
	if NumericShorthand(strings.ToLower(host)) {
		return nil, &net.OpError{Op: "dial", Net: network, Err: &RefusedError{Addr: host, Reason: "numeric shorthand (not a dotted quad)"}}
	}
	d := net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: control}
	if g.HostAllowed(host) {
		d.Control = controlAllowed
	}
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		_, literal := netip.ParseAddr(host)
		return nil, hideNetwork(err, host, literal == nil)
	}
	return conn, nil
}

// hideNetwork is a dial error as a tenant may read it (outbound errors
// end up in delivery logs and run results): without the address a name
// resolved to, the local address or the resolver's address, keeping the
// error's types (a refusal, a DNS failure, a time-out) for callers that
// classify it.
func hideNetwork(err error, host string, literal bool) error {
	var op *net.OpError
	if errors.As(err, &op) {
		c := *op
		c.Source, c.Addr = nil, nil
		c.Err = hideNetwork(op.Err, host, literal)
		return &c
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		c := *dns
		c.Server = ""
		return &c
	}
	var refused *RefusedError
	if errors.As(err, &refused) && !literal {
		refused.Host = host
	}
	return err
}

// IsRefused reports whether err is (or wraps) a guard refusal.
func IsRefused(err error) bool {
	var r *RefusedError
	return errors.As(err, &r)
}
