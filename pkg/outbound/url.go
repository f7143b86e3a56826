package outbound

import (
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"unicode"
)

// Env is the operator's allow-list as the environment gives it: hosts
// (names or IP literals, comma-separated) that outbound calls may reach
// although private, and over plain http. VOICEAI_WEBHOOK_ALLOW_HOSTS is
// its name from when only webhooks called out; it still counts, the two
// lists joined.
type Env struct {
	AllowHosts       string `env:"VOICEAI_OUTBOUND_ALLOW_HOSTS"`
	LegacyAllowHosts string `env:"VOICEAI_WEBHOOK_ALLOW_HOSTS"`
}

// Validate refuses an allow-list entry that is not a host name or an IP
// address (a URL, a port, a space inside): it could never match, and the
// host meant would stay refused with nothing said.
func (e Env) Validate() error {
	for name, list := range map[string]string{"VOICEAI_OUTBOUND_ALLOW_HOSTS": e.AllowHosts, "VOICEAI_WEBHOOK_ALLOW_HOSTS": e.LegacyAllowHosts} {
		for _, h := range ParseAllowHosts(list) {
			if _, err := netip.ParseAddr(strings.Trim(h, "[]")); err != nil && !hostName.MatchString(h) {
				return fmt.Errorf("%s entry %q: want a host name or an IP address, comma-separated (no scheme, port or path)", name, h)
			}
		}
	}
	return nil
}

// hostName is a DNS name as an allow-list holds one.
var hostName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*\.?$`)

// Hosts is the joined allow-list.
func (e Env) Hosts() []string {
	return append(ParseAllowHosts(e.AllowHosts), ParseAllowHosts(e.LegacyAllowHosts)...)
}

// URLProblem is why a destination URL is refused, in the words and error
// type of a validation error.
type URLProblem struct {
	Msg, Type string
	// Allowable says the operator's allow-list (VOICEAI_OUTBOUND_ALLOW_HOSTS)
	// would let the URL through had it listed the host: http, or a private
	// address (cloud metadata never is).
	Allowable bool
}

// CheckURL checks a destination URL before it is stored: absolute, no
// whitespace or control characters, no credentials (user:password@),
// https (http only to an allowed host), and not an IP literal of a
// forbidden range unless its host is allowed (cloud metadata never). It
// answers the URL without its fragment. what names the caller in the
// message ("webhooks", "agent endpoints").
func CheckURL(raw string, allowed func(host string) bool, what string) (string, *URLProblem) {
	if raw != strings.TrimSpace(raw) || strings.ContainsFunc(raw, unicode.IsControl) {
		return "", &URLProblem{"URL must not contain whitespace or control characters", "url_parsing", false}
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Hostname() == "" || u.Opaque != "" {
		return "", &URLProblem{"Input should be an absolute https URL", "url_parsing", false}
	}
	if u.User != nil {
		// Whoever may read the webhook or the agent would read them.
		return "", &URLProblem{"URL must not carry credentials (user:password@): send them in a request header instead", "url_credentials", false}
	}
	host := strings.ToLower(u.Hostname())
	isAllowed := allowed != nil && allowed(host)
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && isAllowed:
	default:
		return "", &URLProblem{"URL scheme should be 'https'", "url_scheme", u.Scheme == "http"}
	}
	if NumericShorthand(host) {
		return "", &URLProblem{"URL host should be a name or an IP address written in full (e.g. 203.0.113.7), not a numeric form such as 0x7f000001, 2130706433, 0177.0.0.1 or 127.1", "url_parsing", false}
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if reason, bad := ForbiddenAddr(ip); bad && (!isAllowed || IsMetadata(ip)) {
			return "", &URLProblem{"URL points to " + withArticle(reason) + " address, which " + what + " may not reach", "url_forbidden_address", !IsMetadata(ip)}
		}
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String(), nil
}

// NumericShorthand reports whether host (a URL's host name, without
// brackets) is a number in place of a name but not an IPv4 address in
// dotted-quad form: 0x7f000001, 2130706433, 0177.0.0.1, 127.1 or
// 127.0.0.1. (a trailing dot). netip reads none of them as an address,
// so they would pass the address check as names, yet the WHATWG URL
// parser, libc's inet_aton and some resolvers read each as an IPv4
// address (these four as loopback). The rule is the URL standard's: a
// host whose last label is a number (decimal, or hexadecimal after 0x)
// is an IPv4 address, so it must be one as written.
func NumericShorthand(host string) bool {
	if _, err := netip.ParseAddr(host); err == nil {
		return false // a dotted quad or an IPv6 address, as written
	}
	h := strings.TrimSuffix(host, ".")
	last := h[strings.LastIndexByte(h, '.')+1:]
	if last == "" {
		return false
	}
	digits := last
	if len(last) >= 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X') {
		digits = last[2:]
		return strings.Trim(digits, "0123456789abcdefABCDEF") == ""
	}
	return strings.Trim(digits, "0123456789") == ""
}

// withArticle is word after its indefinite article (an IPv4-compatible,
// a private): the reasons ForbiddenAddr gives begin with a vowel sound
// exactly when they begin with a vowel.
func withArticle(word string) string {
	if word != "" && strings.ContainsRune("aeiouAEIOU", rune(word[0])) {
		return "an " + word
	}
	return "a " + word
}
