package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	identityv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/identity/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/services/gateway/keycache"
)

// A session opens under the secret that sealed it, until its expiry, and
// nowhere else; its CSRF token is bound to the cookie.
func TestSessionsSealAndOpen(t *testing.T) {
	s, err := newSessions("deployment-secret")
	if err != nil || s == nil {
		t.Fatal(err)
	}
	now := time.Now()
	cookie, err := s.seal("vak_secret_key", now, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(cookie, "vak_secret_key") {
		t.Fatal("the cookie shows the key")
	}
	if v, refusal := s.open(cookie, now); refusal != nil || v.Key != "vak_secret_key" {
		t.Fatalf("open: %v %v", v, refusal)
	}
	if _, refusal := s.open(cookie, now.Add(time.Hour)); refusal != apperr.ConsoleSessionExpired {
		t.Fatalf("past its expiry: %v", refusal)
	}
	other, _ := newSessions("another-secret")
	if _, refusal := other.open(cookie, now); refusal != apperr.ConsoleSessionInvalid {
		t.Fatalf("under another secret: %v", refusal)
	}
	tampered := []byte(cookie)
	tampered[len(tampered)/2] ^= 1
	for _, bad := range []string{string(tampered), "", "not base64!", cookie[:10]} {
		if _, refusal := s.open(bad, now); refusal != apperr.ConsoleSessionInvalid {
			t.Errorf("open(%q): %v", bad, refusal)
		}
	}
	again, _ := s.seal("vak_secret_key", now, now.Add(time.Hour))
	if again == cookie || s.csrf(again) == s.csrf(cookie) {
		t.Error("each sign-in has its own cookie and token")
	}
	if other.csrf(cookie) == s.csrf(cookie) {
		t.Error("the token depends on the secret")
	}
	if none, err := newSessions(""); none != nil || err != nil {
		t.Error("no secret: no sessions")
	}
}

// The gateway's origin is the scheme and host the client used: https over
// TLS, or from a trusted proxy that says so; a header from anyone else is
// not believed.
func TestSameOrigin(t *testing.T) {
	g := &Gateway{settings: Settings{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.1/32")}}}
	cases := []struct {
		peer, origin, proto string
		tls, want           bool
	}{
		{"192.0.2.1:5", "", "", false, true},
		{"192.0.2.1:5", "http://console.example:8080", "", false, true},
		{"192.0.2.1:5", "http://CONSOLE.example:8080", "", false, true},
		{"192.0.2.1:5", "https://console.example:8080", "", false, false},
		{"192.0.2.1:5", "https://console.example:8080", "", true, true},
		{"192.0.2.1:5", "https://console.example:8080", "https", false, false}, // not a trusted proxy
		{"10.0.0.1:5", "https://console.example:8080", "https", false, true},
		{"192.0.2.1:5", "http://evil.example", "", false, false},
		{"192.0.2.1:5", "http://console.example:8081", "", false, false},
		{"192.0.2.1:5", "null", "", false, false},
		{"192.0.2.1:5", "http://console.example:8080/path", "", false, false},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "http://console.example:8080/console/session", nil)
		r.RemoteAddr = c.peer
		if c.origin != "" {
			r.Header.Set("Origin", c.origin)
		}
		if c.proto != "" {
			r.Header.Set("X-Forwarded-Proto", c.proto)
		}
		if c.tls {
			r.TLS = &tls.ConnectionState{}
		}
		if got := g.sameOrigin(r); got != c.want {
			t.Errorf("%+v: same origin %v", c, got)
		}
	}
}

// A sign-out on one replica ends the session on every replica sharing the
// list, and only that session; a list that cannot be read or written
// honours no session and says so (503), never a signed-out one.
func TestSignOutEndsTheSessionOnEveryReplica(t *testing.T) {
	list := &memorySignOuts{}
	replica := func() *Gateway {
		s, err := newSessions("deployment-secret")
		if err != nil {
			t.Fatal(err)
		}
		s.ended = list
		return &Gateway{sessions: s, now: time.Now}
	}
	one, two := replica(), replica()
	cookie, err := one.sessions.seal("vak_secret_key", time.Now(), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := one.sessions.seal("vak_secret_key", time.Now(), time.Now().Add(time.Hour))
	req := func(value string) *http.Request {
		r := httptest.NewRequest("DELETE", "http://console.example/console/session", nil)
		r.AddCookie(&http.Cookie{Name: sessionCookie, Value: value})
		return r
	}
	for _, g := range []*Gateway{one, two} {
		if _, refusal := g.session(req(cookie), cookie); refusal != nil {
			t.Fatalf("before sign-out: %v", refusal)
		}
	}
	w := httptest.NewRecorder()
	one.signOut(w, req(cookie))
	if w.Code != http.StatusNoContent || !strings.Contains(w.Header().Get("Set-Cookie"), "Max-Age=0") {
		t.Fatalf("sign out: %d %v", w.Code, w.Header())
	}
	for i, g := range []*Gateway{one, two} {
		if _, refusal := g.session(req(cookie), cookie); refusal != apperr.ConsoleSessionEnded {
			t.Errorf("replica %d after sign-out: %v", i+1, refusal)
		}
		if _, refusal := g.session(req(other), other); refusal != nil {
			t.Errorf("replica %d: another session of the same key ended too: %v", i+1, refusal)
		}
	}

	list.mu.Lock()
	list.err = errors.New("bucket unavailable")
	list.mu.Unlock()
	if _, refusal := two.session(req(other), other); refusal != apperr.ServiceUnavailable {
		t.Errorf("list unreadable: %v", refusal)
	}
	w = httptest.NewRecorder()
	two.signOut(w, req(other))
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Set-Cookie") != "" {
		t.Errorf("sign-out not recorded: %d %v, want 503 keeping the cookie to try again", w.Code, w.Header())
	}
	// A cookie without a session id (sealed before sessions had one)
	// cannot be signed out, so it is not honoured.
	b, _ := json.Marshal(map[string]any{"k": "vak_secret_key", "e": time.Now().Add(time.Hour).Unix()})
	sealed, _ := one.sessions.sealer.Seal(sessionPurpose, string(b))
	if _, refusal := one.sessions.open(base64.RawURLEncoding.EncodeToString(sealed), time.Now()); refusal != apperr.ConsoleSessionInvalid {
		t.Errorf("a cookie without an id: %v", refusal)
	}
}

// Over TLS the session cookie is __Host-voiceai_console (Secure, Path=/,
// no Domain), which a sibling subdomain cannot plant, and only that name
// is read there: a bare voiceai_console over TLS may be planted and is no
// session. Plain http, which can set no Secure cookie, keeps the bare name.
func TestTheSessionCookieIsHostPrefixedOverTLS(t *testing.T) {
	s, err := newSessions("deployment-secret")
	if err != nil {
		t.Fatal(err)
	}
	s.ended = &memorySignOuts{}
	keys := keycache.New()
	sum := sha256.Sum256([]byte("vak_console_key"))
	keys.PutKey(&identityv1.ApiKey{KeyId: "key_1", WorkspaceId: "ws", ServiceAccountUserId: "sa_1", SecretSha256: sum[:]})
	g := &Gateway{sessions: s, keys: keys, now: time.Now,
		denials: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "denials"}, []string{"code", "status"})}
	req := func(method string, overTLS bool, body string, cookies ...*http.Cookie) *http.Request {
		r := httptest.NewRequest(method, "http://console.example/console/session", strings.NewReader(body))
		if overTLS {
			r.TLS = &tls.ConnectionState{}
		}
		for _, c := range cookies {
			r.AddCookie(c)
		}
		return r
	}
	signIn := func(overTLS bool) *http.Cookie {
		w := httptest.NewRecorder()
		g.signIn(w, req("POST", overTLS, `{"api_key":"vak_console_key"}`))
		cs := w.Result().Cookies()
		if w.Code != http.StatusOK || len(cs) != 1 {
			t.Fatalf("sign in (TLS %v): %d %v %s", overTLS, w.Code, w.Header(), w.Body)
		}
		return cs[0]
	}
	session := func(overTLS bool, c *http.Cookie) int {
		w := httptest.NewRecorder()
		g.getSession(w, req("GET", overTLS, "", c))
		return w.Code
	}

	secure := signIn(true)
	if secure.Name != "__Host-voiceai_console" || !secure.Secure || secure.Path != "/" || secure.Domain != "" {
		t.Errorf("over TLS: %+v, want __Host-voiceai_console, Secure, Path=/, no Domain", secure)
	}
	if code := session(true, secure); code != http.StatusOK {
		t.Errorf("the prefixed cookie over TLS: %d", code)
	}
	if code := session(true, &http.Cookie{Name: sessionCookie, Value: secure.Value}); code != http.StatusUnauthorized {
		t.Errorf("the bare name over TLS, holding a good session: %d, want 401", code)
	}
	plain := signIn(false)
	if plain.Name != "voiceai_console" || plain.Secure {
		t.Errorf("over plain http: %+v, want voiceai_console, not Secure", plain)
	}
	if code := session(false, plain); code != http.StatusOK {
		t.Errorf("the bare cookie over plain http: %d", code)
	}

	// Signing out over TLS ends the prefixed cookie's session and clears it.
	w := httptest.NewRecorder()
	g.signOut(w, req("DELETE", true, "", secure))
	if cs := w.Result().Cookies(); w.Code != http.StatusNoContent || len(cs) != 1 || cs[0].Name != hostSessionCookie || !cs[0].Secure || cs[0].MaxAge >= 0 {
		t.Errorf("sign out over TLS: %d %v", w.Code, w.Header().Values("Set-Cookie"))
	}
	if code := session(true, secure); code != http.StatusUnauthorized {
		t.Errorf("after sign-out: %d", code)
	}
}

// memorySignOuts is the list of one process (tests).
type memorySignOuts struct {
	mu    sync.Mutex
	ended map[string]bool
	err   error // what every call answers when set
}

func (s *memorySignOuts) End(_ context.Context, id string, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	if s.ended == nil {
		s.ended = map[string]bool{}
	}
	s.ended[id] = true
	return nil
}

func (s *memorySignOuts) Ended(_ context.Context, id string, _ time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended[id], s.err
}

// A console address that names no page answers the console's own page
// saying so (404, HTML, with its script), not the API's JSON; any other
// unknown console path still answers the API's 404.
func TestAnUnknownConsolePageIsAPageNotFound(t *testing.T) {
	assets := consoleAssets()
	for _, c := range []struct {
		path, wantType string
		wantBody       string
	}{
		{"/console/nothing.html", "text/html", `src="js/notfound.js"`},
		{"/console/js/nothing.js", "application/json", `route_not_found`},
		{"/console/deep/nothing.html", "application/json", `route_not_found`},
	} {
		w := httptest.NewRecorder()
		assets.ServeHTTP(w, httptest.NewRequest("GET", c.path, nil))
		if w.Code != http.StatusNotFound || !strings.HasPrefix(w.Header().Get("Content-Type"), c.wantType) || !strings.Contains(w.Body.String(), c.wantBody) {
			t.Fatalf("%s: %d %q %q", c.path, w.Code, w.Header().Get("Content-Type"), w.Body.String())
		}
	}
	w := httptest.NewRecorder()
	assets.ServeHTTP(w, httptest.NewRequest("GET", "/console/js/notfound.js", nil))
	if w.Code != http.StatusOK {
		t.Fatalf("the page's script: %d", w.Code)
	}
}
