package outbound

import (
	"net/netip"
	"net/url"
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

// Hosts is the joined allow-list.
func (e Env) Hosts() []string {
	return append(ParseAllowHosts(e.AllowHosts), ParseAllowHosts(e.LegacyAllowHosts)...)
}

// URLProblem is why a destination URL is refused, in the words and error
// type of a validation error.
type URLProblem struct {
	Msg, Type string
}

// CheckURL checks a destination URL before it is stored: absolute, no
// whitespace or control characters, https (http only to an allowed host),
// and not an IP literal of a forbidden range unless its host is allowed
// (cloud metadata never). It answers the URL without its fragment. what
// names the caller in the message ("webhooks", "agent endpoints").
func CheckURL(raw string, allowed func(host string) bool, what string) (string, *URLProblem) {
	if raw != strings.TrimSpace(raw) || strings.ContainsFunc(raw, unicode.IsControl) {
		return "", &URLProblem{"URL must not contain whitespace or control characters", "url_parsing"}
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Hostname() == "" || u.Opaque != "" {
		return "", &URLProblem{"Input should be an absolute https URL", "url_parsing"}
	}
	host := strings.ToLower(u.Hostname())
	isAllowed := allowed != nil && allowed(host)
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && isAllowed:
	default:
		return "", &URLProblem{"URL scheme should be 'https'", "url_scheme"}
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if reason, bad := ForbiddenAddr(ip); bad && (!isAllowed || IsMetadata(ip)) {
			return "", &URLProblem{"URL points to a " + reason + " address, which " + what + " may not reach", "url_forbidden_address"}
		}
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String(), nil
}
