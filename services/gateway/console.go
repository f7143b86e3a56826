package gateway

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/pkg/runtime"
	"github.com/voiceai-platform/voiceai/pkg/seal"
	"github.com/voiceai-platform/voiceai/services/gateway/keycache"
)

// The console (/console) is the platform's pages for people: static files
// in the binary that call the public API from the browser. A page needs no
// key to load; nothing in it works without one. Signing in trades a key
// for a session cookie holding the key sealed under the deployment secret
// with its expiry and a session id, so any replica honours it and none
// stores it. Signing out records the id in a bucket every replica reads
// (signOuts), so the cookie ends everywhere, not only in the browser that
// dropped it; a revoked key ends its sessions too, as the key cache
// refuses it. The cookie alone is no credential: Authenticate takes it
// only with the CSRF token its sign-in answered (kept in the page's
// memory) and from the gateway's own origin.
const (
	sessionCookie = "voiceai_console"
	// hostSessionCookie is its name over TLS: the browser keeps a
	// __Host- cookie only if it is Secure, for Path=/ and no Domain, so a
	// sibling subdomain cannot plant one that would be read as ours.
	hostSessionCookie = "__Host-" + sessionCookie
	sessionTTL        = 8 * time.Hour
	sessionPurpose    = "console-session" // the sealed value's owner and its key's purpose
	headerCSRF        = "X-Csrf-Token"
	// maxSignInBody bounds a sign-in body: a key and some JSON.
	maxSignInBody = 4 << 10
)

// consoleCSP allows the console's own scripts, styles and API only: no
// inline script or style, no third party, no framing.
const consoleCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

//go:embed console
var consoleFiles embed.FS

// sessions seals console sessions and derives their CSRF tokens; nil when
// the gateway has no deployment secret (sign-in is then refused).
type sessions struct {
	sealer  *seal.Sealer
	csrfKey []byte
	ended   signOuts // the sessions signed out; set by New
}

func newSessions(secret string) (*sessions, error) {
	if secret == "" {
		return nil, nil
	}
	s, err := seal.New(runtime.SubKey(secret, sessionPurpose))
	if err != nil {
		return nil, err
	}
	return &sessions{sealer: s, csrfKey: runtime.SubKey(secret, "console-csrf")}, nil
}

// sessionValue is what a cookie seals.
type sessionValue struct {
	Key     string `json:"k"`
	Expires int64  `json:"e"` // unix seconds
	// ID names the session in the list of signed-out ones: random, so
	// one sign-out ends one session, not every one of the key.
	ID string `json:"i"`
	// Issued is when it was signed in (unix milliseconds): a session
	// older than the list of signed-out ones may have been signed out in
	// a list since lost (kvSignOuts).
	Issued int64 `json:"n,omitempty"`
}

// issued is when v was signed in; a cookie sealed before sessions said
// so is taken as issued a whole sessionTTL before its expiry, the
// earliest it can have been.
func (v sessionValue) issued() time.Time {
	if v.Issued == 0 {
		return time.Unix(v.Expires, 0).Add(-sessionTTL)
	}
	return time.UnixMilli(v.Issued)
}

func (s *sessions) seal(key string, issued, expires time.Time) (string, error) {
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return "", err
	}
	b, _ := json.Marshal(sessionValue{Key: key, Expires: expires.Unix(), ID: base64.RawURLEncoding.EncodeToString(id), Issued: issued.UnixMilli()})
	sealed, err := s.sealer.Seal(sessionPurpose, string(b))
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(sealed), nil
}

// open returns the key a cookie value seals, or why it cannot be used.
func (s *sessions) open(cookie string, now time.Time) (sessionValue, *apperr.Error) {
	raw, err := base64.RawURLEncoding.DecodeString(cookie)
	if err != nil {
		return sessionValue{}, apperr.ConsoleSessionInvalid
	}
	b, err := s.sealer.Open(sessionPurpose, raw)
	var v sessionValue
	// A cookie without an id (sealed before sessions had one) cannot be
	// signed out: it asks for a new sign-in.
	if err != nil || json.Unmarshal(b, &v) != nil || v.Key == "" || v.ID == "" {
		return sessionValue{}, apperr.ConsoleSessionInvalid
	}
	if now.Unix() >= v.Expires {
		return sessionValue{}, apperr.ConsoleSessionExpired
	}
	return v, nil
}

// session is the live session a cookie holds: open, unexpired and not
// signed out on any replica. The list of signed-out sessions not
// answering is a 503: a session that may have ended is not honoured.
func (g *Gateway) session(r *http.Request, cookie string) (sessionValue, *apperr.Error) {
	v, refusal := g.sessions.open(cookie, g.now())
	if refusal != nil {
		return v, refusal
	}
	ctx, cancel := context.WithTimeout(r.Context(), signOutCheckTimeout)
	defer cancel()
	ended, err := g.sessions.ended.Ended(ctx, v.ID, v.issued())
	switch {
	case err != nil:
		httpx.LoggerFrom(r.Context()).Warn("console sign-outs cannot be read", "err", err)
		return v, apperr.ServiceUnavailable
	case ended:
		return v, apperr.ConsoleSessionEnded
	}
	return v, nil
}

// csrf is the token that goes with a cookie value: a MAC of it, so it
// needs no storage and changes with every sign-in.
func (s *sessions) csrf(cookie string) string {
	m := hmac.New(sha256.New, s.csrfKey)
	m.Write([]byte(cookie))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// consoleCredential is the key a console request's cookie stands for,
// once its CSRF token and origin are checked.
func (g *Gateway) consoleCredential(r *http.Request, c *http.Cookie) (string, *apperr.Error) {
	if !g.sameOrigin(r) {
		return "", apperr.CrossOriginRequest
	}
	if g.sessions == nil {
		return "", apperr.ConsoleSessionInvalid
	}
	// A cookie that does not open (forged, sealed under another secret),
	// has expired or was signed out asks for a new sign-in whatever its
	// token.
	v, refusal := g.session(r, c.Value)
	if refusal != nil {
		return "", refusal
	}
	token := r.Header.Get(headerCSRF)
	if token == "" || !hmac.Equal([]byte(token), []byte(g.sessions.csrf(c.Value))) {
		return "", apperr.CSRFTokenInvalid
	}
	return v.Key, nil
}

// scheme is how the client reached the gateway: over TLS, or through a
// trusted proxy that says it terminated TLS.
func (g *Gateway) scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	if strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") && g.trusted(g.peer(r)) {
		return "https"
	}
	return "http"
}

// cookieName is the session cookie's name for r: prefixed over TLS, and
// only that one read there (an unprefixed cookie may have been planted).
// Plain http can have no Secure cookie, so it keeps the bare name.
func (g *Gateway) cookieName(r *http.Request) string {
	if g.scheme(r) == "https" {
		return hostSessionCookie
	}
	return sessionCookie
}

// consoleCookie is the request's session cookie, by cookieName.
func (g *Gateway) consoleCookie(r *http.Request) (*http.Cookie, error) {
	return r.Cookie(g.cookieName(r))
}

// sameOrigin reports whether the request's Origin, when it has one, is
// the gateway's own (scheme and host as the client addressed it).
func (g *Gateway) sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true // not sent on same-origin GETs; a cross-site request carries no cookie (SameSite=Strict)
	}
	u, err := url.Parse(o)
	if err != nil || u.Path != "" || u.User != nil {
		return false
	}
	return u.Scheme == g.scheme(r) && strings.EqualFold(u.Host, r.Host)
}

// console serves the console's pages and its session: every answer under
// /console carries the security headers, refusals included.
func (g *Gateway) console() http.Handler {
	m := mux.NewRouter().SkipClean(true) // as the gateway's: see routes
	m.NotFoundHandler = httpx.NotFoundHandler()
	m.MethodNotAllowedHandler = httpx.MethodNotAllowedHandler(m)
	m.Handle(api.ConsolePath, http.RedirectHandler(api.ConsolePath+"/", http.StatusMovedPermanently)).Methods(http.MethodGet, http.MethodHead)
	m.HandleFunc(api.ConsoleSessionPath, g.getSession).Methods(http.MethodGet)
	m.HandleFunc(api.ConsoleSessionPath, g.signIn).Methods(http.MethodPost)
	m.HandleFunc(api.ConsoleSessionPath, g.signOut).Methods(http.MethodDelete)
	m.PathPrefix(api.ConsolePath+"/").Handler(consoleAssets()).Methods(http.MethodGet, http.MethodHead)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", consoleCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cache-Control", "no-store") // the assets' handler allows revalidated caching
		m.ServeHTTP(w, r)
	})
}

// isConsole matches the console's paths (and not, say, /consoles).
func isConsole(r *http.Request, _ *mux.RouteMatch) bool {
	return r.URL.Path == api.ConsolePath || strings.HasPrefix(r.URL.Path, api.ConsolePath+"/")
}

// consolePages are the console's pages: one shell (page.html.tmpl), a
// title and a script each.
var consolePages = map[string]struct{ Title, Script string }{
	"index.html":      {"Triage queue", "queue.js"},
	"ticket.html":     {"Ticket", "ticket.js"},
	"tests.html":      {"Tests", "tests.js"},
	"invocation.html": {"Test invocation", "invocation.js"},
	"loadtest.html":   {"Load test", "loadtest.js"},
	"webhooks.html":   {"Webhooks", "webhooks.js"},
	"agents.html":     {"Agents", "agents.js"},
	"keys.html":       {"API keys", "keys.js"},
	"review.html":     {"Review verdicts", "review.js"},

	"conversations.html": {"Conversations", "conversations.js"},
}

// consoleAssets serves the embedded files by exact name (no directory
// listings), each with an ETag so a browser revalidates cheaply.
func consoleAssets() http.Handler {
	type asset struct {
		name, etag string
		body       []byte
	}
	root, _ := fs.Sub(consoleFiles, "console")
	assets := map[string]asset{}
	_ = fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		assets["/"+p] = asset{name: path.Base(p), etag: `"` + hex.EncodeToString(sum[:8]) + `"`, body: b}
		return nil
	})
	// The pages share one shell; each names its title and script.
	shell := template.Must(template.ParseFS(root, "page.html.tmpl"))
	delete(assets, "/page.html.tmpl")
	for name, page := range consolePages {
		var b bytes.Buffer
		if err := shell.Execute(&b, page); err != nil {
			panic(err) // a fixed template over fixed values: checked by every test that loads a page
		}
		sum := sha256.Sum256(b.Bytes())
		assets["/"+name] = asset{name: name, etag: `"` + hex.EncodeToString(sum[:8]) + `"`, body: b.Bytes()}
	}
	assets["/"] = assets["/index.html"]
	// A page's address that names no page (a typo, an old bookmark) is a
	// page too: the console's, saying so, with its navigation, answered 404.
	var missing bytes.Buffer
	if err := shell.Execute(&missing, struct{ Title, Script string }{"Page not found", "notfound.js"}); err != nil {
		panic(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, api.ConsolePath)
		a, ok := assets[name]
		if !ok && strings.HasSuffix(name, ".html") && strings.Count(name, "/") == 1 {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(http.StatusNotFound)
			if r.Method != http.MethodHead {
				_, _ = w.Write(missing.Bytes())
			}
			return
		}
		if !ok {
			httpx.WriteError(w, r, apperr.RouteNotFound(r.Method, r.URL.Path))
			return
		}
		w.Header().Set("Cache-Control", "no-cache") // revalidate: a new binary may bring new files
		w.Header().Set("ETag", a.etag)
		http.ServeContent(w, r, a.name, time.Time{}, bytes.NewReader(a.body))
	})
}

// sessionInfo is what the console learns of its caller: the CSRF token to
// send, and what the key may do (the operations' names), so a page offers
// no control that would be refused.
type sessionInfo struct {
	CSRFToken     string   `json:"csrf_token"`
	ExpiresAtUnix int64    `json:"expires_at_unix"`
	WorkspaceID   string   `json:"workspace_id"`
	UserID        string   `json:"user_id"`
	UserName      string   `json:"user_name"`
	KeyID         string   `json:"key_id"`
	KeyName       string   `json:"key_name"`
	Permissions   []string `json:"permissions"`
	Operations    []string `json:"operations"`
}

func (g *Gateway) info(key keycache.Key, cookie string, expires int64) sessionInfo {
	user := g.keys.User(key.UserID)
	p := principal.Principal{Permissions: key.Permissions}
	ops := []string{}
	for _, op := range api.Operations {
		if p.HasAny(op.Perms...) {
			ops = append(ops, op.Name)
		}
	}
	perms := slices.Clone(key.Permissions)
	if perms == nil {
		perms = []string{}
	}
	return sessionInfo{
		CSRFToken: g.sessions.csrf(cookie), ExpiresAtUnix: expires, WorkspaceID: key.WorkspaceID, UserID: key.UserID,
		UserName: user.Name, KeyID: key.ID, KeyName: key.Name, Permissions: perms, Operations: ops,
	}
}

// validKey resolves a key as Authenticate does, including its address
// restriction; a refusal is the error to answer.
func (g *Gateway) validKey(r *http.Request, secret string) (keycache.Key, *apperr.Error) {
	key, status := g.keys.Authenticate(secret, g.now())
	if status == keycache.Unknown && g.catchUp.Wait(r.Context()) == nil {
		key, status = g.keys.Authenticate(secret, g.now())
	}
	if status != keycache.Valid {
		refusal, ok := authFailures[status]
		if !ok {
			refusal = apperr.InvalidAPIKey
		}
		return key, refusal
	}
	httpx.NoteCaller(r.Context(), key.WorkspaceID, key.ID)
	if !key.AllowsIP(g.clientIP(r)) {
		return key, apperr.IPNotAllowed
	}
	return key, nil
}

// signIn trades an API key for a session: POST {"api_key": "..."}.
func (g *Gateway) signIn(w http.ResponseWriter, r *http.Request) {
	if !g.sameOrigin(r) {
		g.deny(w, r, apperr.CrossOriginRequest)
		return
	}
	if g.sessions == nil {
		g.deny(w, r, apperr.ConsoleUnavailable)
		return
	}
	var body struct {
		APIKey string `json:"api_key"`
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxSignInBody+1))
	switch {
	case err != nil:
		httpx.WriteError(w, r, apperr.UnreadableBody)
		return
	case len(raw) > maxSignInBody:
		httpx.WriteError(w, r, apperr.BodyTooLarge(maxSignInBody))
		return
	case json.Unmarshal(raw, &body) != nil:
		httpx.WriteError(w, r, apperr.MalformedJSON("want {\"api_key\": \"...\"}"))
		return
	}
	secret := strings.TrimSpace(body.APIKey)
	if secret == "" {
		g.deny(w, r, apperr.ConsoleKeyMissing)
		return
	}
	key, refusal := g.validKey(r, secret)
	if refusal != nil {
		g.deny(w, r, refusal)
		return
	}
	now := g.now()
	expires := now.Add(sessionTTL)
	if !key.ExpiresAt.IsZero() && key.ExpiresAt.Before(expires) {
		expires = key.ExpiresAt
	}
	value, err := g.sessions.seal(secret, now, expires)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: g.cookieName(r), Value: value, Path: "/", Expires: expires, MaxAge: int(expires.Sub(now).Seconds()),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: g.scheme(r) == "https",
	})
	httpx.WriteJSON(w, http.StatusOK, g.info(key, value, expires.Unix()))
}

// getSession answers the session a page's cookie holds (a page keeps its
// CSRF token in memory only, so each page load asks for it again; a
// cross-origin page cannot read the answer).
func (g *Gateway) getSession(w http.ResponseWriter, r *http.Request) {
	if !g.sameOrigin(r) {
		g.deny(w, r, apperr.CrossOriginRequest)
		return
	}
	c, err := g.consoleCookie(r)
	if err != nil || g.sessions == nil {
		g.deny(w, r, apperr.ConsoleSignedOut)
		return
	}
	v, refusal := g.session(r, c.Value)
	if refusal == nil {
		var key keycache.Key
		if key, refusal = g.validKey(r, v.Key); refusal == nil {
			httpx.WriteJSON(w, http.StatusOK, g.info(key, c.Value, v.Expires))
			return
		}
	}
	g.deny(w, r, refusal)
}

// signOut ends the cookie's session on every replica and clears the
// cookie. A sign-out that could not be recorded is a 503 that keeps the
// cookie, so the page says so and the person can try again, rather than
// drop a cookie that still works elsewhere.
func (g *Gateway) signOut(w http.ResponseWriter, r *http.Request) {
	if !g.sameOrigin(r) {
		g.deny(w, r, apperr.CrossOriginRequest)
		return
	}
	// A cookie that does not open, or has expired, is no session to end.
	if c, err := g.consoleCookie(r); err == nil && g.sessions != nil {
		if v, refusal := g.sessions.open(c.Value, g.now()); refusal == nil {
			ctx, cancel := context.WithTimeout(r.Context(), signOutCheckTimeout)
			defer cancel()
			if err := g.sessions.ended.End(ctx, v.ID, time.Unix(v.Expires, 0)); err != nil {
				httpx.LoggerFrom(r.Context()).Warn("console sign-out not recorded", "err", err)
				httpx.WriteError(w, r, apperr.ServiceUnavailable)
				return
			}
		}
	}
	http.SetCookie(w, &http.Cookie{Name: g.cookieName(r), Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: g.scheme(r) == "https"})
	w.WriteHeader(http.StatusNoContent)
}
