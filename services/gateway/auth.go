package gateway

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/gateway/keycache"
	"github.com/voiceai-platform/voiceai/services/gateway/ratelimit"
)

// Header names of spec section 5.
const (
	headerAPIKey        = "X-Api-Key"
	headerSDKAPIKey     = "Xi-Api-Key" // where the official SDKs send the key
	headerAuthorization = "Authorization"
	headerWorkspace     = "X-Workspace-Id" // optional: assert the key's workspace
)

// credentialParams are query names a client might put a key in. Keys are
// never accepted from a URL (they end up in logs and browser history), so
// such a request is refused outright rather than ignored.
var credentialParams = []string{"x-api-key", "xi-api-key", "api_key", "apikey", "api-key", "key", "token", "access_token"}

var authFailures = map[keycache.Status]*apperr.Error{
	keycache.Unknown:  apperr.InvalidAPIKey,
	keycache.Revoked:  apperr.APIKeyRevoked,
	keycache.Disabled: apperr.APIKeyDisabled,
	keycache.Expired:  apperr.APIKeyExpired,
}

// Authenticate resolves the caller's key, applies its IP restriction and
// rate limits, and hands the request on with the caller attached.
func (g *Gateway) Authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		principal.StripInternalHeaders(r.Header)
		if hasCredentialInQuery(r) {
			g.deny(w, r, apperr.CredentialsInURL)
			return
		}
		secret, ambiguousKey := oneValue(r.Header, headerAPIKey)
		sdkSecret, ambiguousSDKKey := oneValue(r.Header, headerSDKAPIKey)
		auth, ambiguousAuth := oneValue(r.Header, headerAuthorization)
		switch {
		case ambiguousKey || ambiguousSDKKey || ambiguousAuth,
			secret != "" && sdkSecret != "" && secret != sdkSecret:
			g.deny(w, r, apperr.AmbiguousCredentials)
			return
		case secret == "":
			secret = sdkSecret // the official SDKs send the key as xi-api-key
		}
		_, authSent := r.Header[headerAuthorization] // an empty one is still a second credential (spec 5.4)
		switch {
		case secret != "" && authSent:
			g.deny(w, r, apperr.AmbiguousCredentials)
			return
		case secret == "" && auth == "":
			// No key header: a console session's cookie may stand for
			// one, with its CSRF token, from the gateway's own origin.
			c, err := g.consoleCookie(r)
			if err != nil {
				g.deny(w, r, apperr.MissingAPIKey)
				return
			}
			var refusal *apperr.Error
			if secret, refusal = g.consoleCredential(r, c); refusal != nil {
				g.deny(w, r, refusal)
				return
			}
		case secret == "":
			g.deny(w, r, apperr.MissingAPIKey)
			return
		}
		key, refusal := g.validKey(r, secret)
		if refusal == nil {
			if ws := r.Header.Get(headerWorkspace); ws != "" && ws != key.WorkspaceID {
				refusal = apperr.WorkspaceForbidden(ws)
			}
		}
		if refusal != nil {
			g.deny(w, r, refusal)
			return
		}
		if !g.admit(w, r, key) {
			return
		}
		user := g.keys.User(key.UserID)
		p := principal.Principal{
			WorkspaceID: key.WorkspaceID, UserID: key.UserID, Email: user.Email, Name: user.Name,
			KeyID: key.ID, Permissions: key.Permissions,
		}
		p.SetHeaders(r.Header)
		r.Header.Del(headerAPIKey) // services never see secrets
		r.Header.Del(headerSDKAPIKey)
		r.Header.Del("Cookie") // the console's session seals the key
		r.Header.Del(headerCSRF)
		next.ServeHTTP(w, r.WithContext(principal.With(r.Context(), p)))
	})
}

// keyLimits are the limits a key is held to: its own where it has them,
// within the operator's ceiling (max, 0: none), else the defaults.
func keyLimits(defaults, max ratelimit.Limits, key keycache.Key) ratelimit.Limits {
	own := func(def, mine, ceiling int64) int64 {
		if mine <= 0 {
			return def
		}
		if ceiling > 0 {
			return min(mine, ceiling)
		}
		return mine
	}
	return ratelimit.Limits{PerMinute: own(defaults.PerMinute, key.PerMinute, max.PerMinute), PerHour: own(defaults.PerHour, key.PerHour, max.PerHour)}
}

// admit counts the request against the key's limits and writes the
// rate-limit headers; false means the request was answered with 429 or 503.
func (g *Gateway) admit(w http.ResponseWriter, r *http.Request, key keycache.Key) bool {
	lim := keyLimits(g.settings.Limits, g.settings.MaxLimits, key)
	now := g.now()
	d, err := g.limiter.Allow(r.Context(), key.ID, lim)
	if err != nil {
		// The shared counters cannot answer (a leader election, a NATS
		// restart): this replica counts alone until they heal, rather
		// than refusing every request or counting none.
		httpx.LoggerFrom(r.Context()).Warn("shared rate limits unavailable; counting locally", "err", err)
		g.localLimits.Inc()
		d = g.fallback.Allow(key.ID, lim, now)
	}
	ratelimit.SetHeaders(w.Header(), d, now)
	if !d.Allowed {
		w.Header().Set("Retry-After", strconv.FormatInt(ratelimit.RetryAfterSeconds(d, now), 10))
		g.deny(w, r, apperr.RateLimitExceeded(d.Nearest().Limit, d.Nearest().Name))
		return false
	}
	return true
}

// clientIP is the peer address, or, when the peer is a trusted proxy, the
// right-most address in X-Forwarded-For that is not itself trusted.
func (g *Gateway) clientIP(r *http.Request) netip.Addr {
	peer := g.peer(r)
	if !peer.IsValid() || !g.trusted(peer) {
		return peer
	}
	// Several header lines are one comma-separated list (RFC 9110 5.3):
	// reading only the first would let a client's own line win over the
	// one its proxy appended.
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		if a = a.Unmap(); !g.trusted(a) {
			return a
		}
	}
	return peer
}

// peer is the address the request came from (invalid if unparsable).
func (g *Gateway) peer(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return peer.Unmap()
}

func (g *Gateway) trusted(a netip.Addr) bool {
	for _, p := range g.settings.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func hasCredentialInQuery(r *http.Request) bool {
	q := r.URL.Query()
	for name := range q {
		for _, c := range credentialParams {
			if strings.EqualFold(name, c) {
				return true
			}
		}
	}
	return false
}

func callerFrom(r *http.Request) principal.Principal {
	p, _ := principal.From(r.Context())
	return p
}

// deny answers a refused request in the spec's error shape and counts it.
func (g *Gateway) deny(w http.ResponseWriter, r *http.Request, e *apperr.Error) {
	g.denials.WithLabelValues(strconv.Itoa(httpx.StatusOf(e)), e.Status).Inc()
	httpx.WriteError(w, r, e)
}

// oneValue is a header's value, and whether the request sent the header
// more than once with different values: a key beside another key (say, a
// proxy's added to the caller's) is as ambiguous as a key beside an
// Authorization, and neither is picked.
func oneValue(h http.Header, name string) (v string, ambiguous bool) {
	vs := h.Values(name)
	if len(vs) == 0 {
		return "", false
	}
	for _, other := range vs[1:] {
		if other != vs[0] {
			return vs[0], true
		}
	}
	return vs[0], false
}
