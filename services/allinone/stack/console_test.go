package stack

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

const consoleCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// wantConsoleHeaders asserts the headers every /console answer carries.
func wantConsoleHeaders(t *testing.T, what string, r response) {
	t.Helper()
	for h, want := range map[string]string{
		"Content-Security-Policy": consoleCSP, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
	} {
		if got := r.Header.Get(h); got != want {
			t.Errorf("%s: %s = %q, want %q", what, h, got, want)
		}
	}
	if r.Header.Get("Cache-Control") == "" {
		t.Errorf("%s: no Cache-Control", what)
	}
}

// The console's pages load without a key, from the binary, with a strict
// CSP on every answer (refusals included), and ask nothing of a third party.
func TestConsoleServesItsPages(t *testing.T) {
	t.Parallel()
	s := start(t, t.TempDir(), func(c *Config) { c.BootstrapAdminKey = adminKey })
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get("http://" + s.Addr + "/console")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/console/" {
		t.Fatalf("GET /console: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	wantConsoleHeaders(t, "/console", response{Code: resp.StatusCode, Header: resp.Header})

	assetRef := regexp.MustCompile(`(?:src|href)="([^"]+)"|from '([^']+)'|import\('([^']+)'\)`)
	seen := map[string]bool{}
	queue := []string{"/console/"}
	for _, page := range []string{"index", "ticket", "tests", "invocation", "webhooks", "agents", "keys"} {
		queue = append(queue, "/console/"+page+".html")
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		r := call(t, s, "GET", p, "", "")
		if r.Code != 200 || len(r.Body) == 0 {
			t.Fatalf("GET %s: %d %.200s", p, r.Code, r.Body)
		}
		wantConsoleHeaders(t, p, r)
		ct := r.Header.Get("Content-Type")
		switch {
		case strings.HasSuffix(p, ".js") && !strings.HasPrefix(ct, "text/javascript"),
			strings.HasSuffix(p, ".css") && !strings.HasPrefix(ct, "text/css"),
			strings.HasSuffix(p, "/") || strings.HasSuffix(p, ".html") && !strings.HasPrefix(ct, "text/html"):
			if !strings.HasPrefix(ct, "text/html") || !strings.HasSuffix(p, "/") {
				t.Errorf("%s: Content-Type %q", p, ct)
			}
		}
		body := string(r.Body)
		if strings.Contains(body, "innerHTML") || strings.Contains(body, "insertAdjacentHTML") || strings.Contains(body, "document.write") {
			t.Errorf("%s writes markup", p)
		}
		if regexp.MustCompile(`<script>|<style|style="|\son[a-z]+="`).MatchString(body) {
			t.Errorf("%s has inline script or style, which the CSP refuses", p)
		}
		if m := regexp.MustCompile(`(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}`).FindString(body); m != "" && !strings.HasSuffix(p, ".js") {
			t.Errorf("%s refers to another site: %s", p, m)
		}
		for _, m := range assetRef.FindAllStringSubmatch(body, -1) {
			ref := m[1] + m[2] + m[3]
			if strings.HasPrefix(ref, "data:") || strings.HasPrefix(ref, "#") || strings.Contains(ref, "?") {
				continue
			}
			if strings.Contains(ref, "//") {
				t.Errorf("%s loads %s from elsewhere", p, ref)
				continue
			}
			base := p[:strings.LastIndex(p, "/")+1]
			for strings.HasPrefix(ref, "./") {
				ref = ref[2:]
			}
			if strings.HasSuffix(ref, ".html") || strings.HasSuffix(ref, ".js") || strings.HasSuffix(ref, ".css") {
				if strings.HasPrefix(p, "/console/js/") && !strings.HasPrefix(ref, "/") {
					base = "/console/js/"
				}
				queue = append(queue, base+ref)
			}
		}
	}
	if !seen["/console/js/api.js"] || !seen["/console/js/dom.js"] || !seen["/console/console.css"] {
		t.Fatalf("the pages' assets were not all found: %v", seen)
	}
	// Revalidation: an asset's ETag answers 304.
	r := call(t, s, "GET", "/console/js/api.js", "", "")
	if r2 := call(t, s, "GET", "/console/js/api.js", "", "", "If-None-Match", r.Header.Get("ETag")); r2.Code != http.StatusNotModified {
		t.Errorf("If-None-Match: %d", r2.Code)
	}
	// Refusals carry the headers too.
	for _, c := range []struct{ method, path string }{{"GET", "/console/nope.js"}, {"GET", "/console/js/"}, {"PUT", "/console/"}, {"PATCH", "/console/session"}} {
		r := call(t, s, c.method, c.path, "", "")
		if r.Code != 404 && r.Code != 405 {
			t.Errorf("%s %s: %d", c.method, c.path, r.Code)
		}
		wantConsoleHeaders(t, c.method+" "+c.path, r)
	}
	// Not the console.
	if r := call(t, s, "GET", "/consoles", "", ""); r.Header.Get("Content-Security-Policy") != "" || r.Code != 401 {
		t.Errorf("/consoles: %d %v", r.Code, r.Header)
	}
}

// consoleSession signs in with key and answers the cookie and the session.
func consoleSession(t *testing.T, s *Stack, key string, headers ...string) (cookie *http.Cookie, info map[string]any, r response) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"api_key": key})
	r = call(t, s, "POST", api.ConsoleSessionPath, "", string(body), append([]string{"Content-Type", "application/json"}, headers...)...)
	if r.Code != 200 {
		t.Fatalf("sign in: %d %s", r.Code, r.Body)
	}
	wantConsoleHeaders(t, "sign-in", r)
	// Over TLS (here: a trusted proxy's X-Forwarded-Proto) the cookie
	// has the __Host- prefix, so no sibling subdomain can plant it.
	name := "voiceai_console"
	for i := 0; i+1 < len(headers); i += 2 {
		if strings.EqualFold(headers[i], "X-Forwarded-Proto") && headers[i+1] == "https" {
			name = "__Host-voiceai_console"
		}
	}
	cookies := (&http.Response{Header: r.Header}).Cookies()
	if len(cookies) != 1 || cookies[0].Name != name {
		t.Fatalf("sign-in cookies: %v, want %s", r.Header.Values("Set-Cookie"), name)
	}
	return cookies[0], r.JSON(t), r
}

// The console's session: a sealed, HttpOnly, SameSite=Strict cookie that
// counts as the key only with its CSRF token and from the same origin.
func TestConsoleSession(t *testing.T) {
	t.Parallel()
	cfg := adminConfig(t, func(c *Config) { c.TrustedProxies = []string{"127.0.0.1", "::1"} })
	logs := &testkit.LogBuffer{} // every log line, at debug: none may hold a key or a session
	s := run(t, cfg, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), nil)
	var answers []response // every answer: none may hold a key in plain form
	keep := func(r response) response { answers = append(answers, r); return r }

	cookie, info, r := consoleSession(t, s, adminKey)
	keep(r)
	raw := r.Header.Get("Set-Cookie")
	for _, flag := range []string{"HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(raw, flag) {
			t.Errorf("cookie %q lacks %s", raw, flag)
		}
	}
	if strings.Contains(raw, "Secure") {
		t.Errorf("cookie over plain http is Secure: %q", raw)
	}
	if cookie.MaxAge <= 0 || cookie.MaxAge > 8*3600 {
		t.Errorf("cookie Max-Age %d, want ≤ 8 h", cookie.MaxAge)
	}
	if exp := int64(info["expires_at_unix"].(float64)); exp > time.Now().Add(8*time.Hour+time.Minute).Unix() {
		t.Errorf("session expires at %d, beyond 8 h", exp)
	}
	csrf, _ := info["csrf_token"].(string)
	if csrf == "" || !slices.Contains(toStrings(info["operations"]), api.UpdateTicket.Name) {
		t.Fatalf("session: %v", info)
	}
	// Through a trusted proxy that terminated TLS, the cookie is Secure.
	_, _, r = consoleSession(t, s, adminKey, "X-Forwarded-Proto", "https")
	if !strings.Contains(keep(r).Header.Get("Set-Cookie"), "Secure") {
		t.Errorf("cookie behind a TLS proxy is not Secure: %q", r.Header.Get("Set-Cookie"))
	}

	jar := "voiceai_console=" + cookie.Value
	origin := "http://" + s.Addr
	// With the token, the cookie is the key.
	if r := keep(call(t, s, "GET", "/v1/convai/agents", "", "", "Cookie", jar, "X-CSRF-Token", csrf)); r.Code != 200 {
		t.Fatalf("with the session: %d %s", r.Code, r.Body)
	}
	agent := keep(call(t, s, "POST", "/v1/convai/agents/create", "", `{"name":"Console"}`, "Cookie", jar, "X-CSRF-Token", csrf, "Origin", origin))
	if agent.Code != 201 {
		t.Fatalf("a write from the console's origin: %d %s", agent.Code, agent.Body)
	}
	// Without it, with a wrong one, or from another origin: 403.
	wantError(t, keep(call(t, s, "GET", "/v1/convai/agents", "", "", "Cookie", jar)), 403, "csrf_token_invalid")
	// A wrong token: the right one with its end changed (a token that
	// happened to end in "AA" was once "changed" into itself).
	wrong := csrf[:len(csrf)-2] + "AA"
	if wrong == csrf {
		wrong = csrf[:len(csrf)-2] + "BB"
	}
	wantError(t, keep(call(t, s, "GET", "/v1/convai/agents", "", "", "Cookie", jar, "X-CSRF-Token", wrong)), 403, "csrf_token_invalid")
	wantError(t, keep(call(t, s, "POST", "/v1/convai/agents/create", "", `{"name":"Evil"}`,
		"Cookie", jar, "X-CSRF-Token", csrf, "Origin", "https://evil.example")), 403, "cross_origin_request")
	wantError(t, keep(call(t, s, "GET", "/v1/convai/agents", "", "", "Cookie", jar, "X-CSRF-Token", csrf, "Origin", "null")), 403, "cross_origin_request")
	wantError(t, keep(call(t, s, "GET", "/v1/convai/agents", "", "", "Cookie", jar, "X-CSRF-Token", csrf, "Origin", "https://"+s.Addr)), 403, "cross_origin_request")
	// A token belongs to its cookie: another sign-in's does not fit.
	other, otherInfo, _ := consoleSession(t, s, adminKey)
	wantError(t, keep(call(t, s, "GET", "/v1/convai/agents", "", "", "Cookie", jar, "X-CSRF-Token", otherInfo["csrf_token"].(string))), 403, "csrf_token_invalid")
	// A forged or altered cookie: 401.
	forged := []byte(cookie.Value)
	forged[10] ^= 1
	wantError(t, keep(call(t, s, "GET", "/v1/convai/agents", "", "", "Cookie", "voiceai_console="+string(forged), "X-CSRF-Token", csrf)), 401, "console_session_invalid")
	wantError(t, keep(call(t, s, "GET", "/v1/convai/agents", "", "", "Cookie", "voiceai_console=abc")), 401, "console_session_invalid")
	// A key header wins over the cookie, as if there were none.
	if r := keep(call(t, s, "GET", "/v1/convai/agents", adminKey, "", "Cookie", "voiceai_console=abc")); r.Code != 200 {
		t.Fatalf("key header with a stray cookie: %d", r.Code)
	}
	// GET session answers the same token for the cookie (a page reload).
	r = keep(call(t, s, "GET", api.ConsoleSessionPath, "", "", "Cookie", "voiceai_console="+other.Value))
	if r.Code != 200 || r.JSON(t)["csrf_token"] != otherInfo["csrf_token"] {
		t.Fatalf("GET session: %d %s", r.Code, r.Body)
	}
	wantConsoleHeaders(t, "GET session", r)
	wantError(t, keep(call(t, s, "GET", api.ConsoleSessionPath, "", "")), 401, "console_signed_out")
	wantError(t, keep(call(t, s, "GET", api.ConsoleSessionPath, "", "", "Cookie", jar, "Origin", "https://evil.example")), 403, "cross_origin_request")

	// Sign-in refusals.
	wantError(t, keep(call(t, s, "POST", api.ConsoleSessionPath, "", `{"api_key":"vak_nope"}`)), 401, "invalid_api_key")
	wantError(t, keep(call(t, s, "POST", api.ConsoleSessionPath, "", `{"api_key":" "}`)), 400, "console_api_key_missing")
	wantError(t, keep(call(t, s, "POST", api.ConsoleSessionPath, "", `{"api_key":`)), 400, "malformed_json")
	wantError(t, keep(call(t, s, "POST", api.ConsoleSessionPath, "", `{"api_key":"`+adminKey+`"}`, "Origin", "https://evil.example")), 403, "cross_origin_request")

	// A read-only key's session reads and cannot write; its session says so.
	roKey, account, roID := newKey(t, s, adminKey, `["convai_read"]`, "")
	roCookie, roInfo, r := consoleSession(t, s, roKey)
	keep(r)
	ops := toStrings(roInfo["operations"])
	if !slices.Contains(ops, api.ListTickets.Name) || slices.Contains(ops, api.UpdateTicket.Name) || slices.Contains(ops, api.CreateWebhook.Name) {
		t.Errorf("read-only session's operations: %v", ops)
	}
	roJar, roCSRF := "voiceai_console="+roCookie.Value, roInfo["csrf_token"].(string)
	if r := keep(call(t, s, "GET", "/v1/convai/triage-tickets", "", "", "Cookie", roJar, "X-CSRF-Token", roCSRF)); r.Code != 200 {
		t.Fatalf("read-only session reads: %d %s", r.Code, r.Body)
	}
	wantError(t, keep(call(t, s, "POST", "/v1/convai/agents/create", "", `{"name":"No"}`, "Cookie", roJar, "X-CSRF-Token", roCSRF, "Origin", origin)), 403, "missing_permission")
	// Its key revoked, the session ends with it.
	if r := call(t, s, "DELETE", "/v1/service-accounts/"+account+"/api-keys/"+roID, adminKey, ""); r.Code != 200 {
		t.Fatalf("revoke: %d %s", r.Code, r.Body)
	}
	eventually(t, 5*time.Second, "a revoked key's session is refused", func() bool {
		return call(t, s, "GET", "/v1/convai/agents", "", "", "Cookie", roJar, "X-CSRF-Token", roCSRF).Code == 401
	})
	wantError(t, keep(call(t, s, "GET", api.ConsoleSessionPath, "", "", "Cookie", roJar)), 401, "api_key_revoked")

	// A key that expires sooner than 8 hours bounds its session; once
	// past, the cookie is refused as expired.
	soon := time.Now().Add(3 * time.Second).Unix()
	shortKey, _, _ := newKey(t, s, adminKey, `["convai_read"]`, `,"expires_at_unix":`+strconv.FormatInt(soon, 10))
	shortCookie, shortInfo, r := consoleSession(t, s, shortKey)
	keep(r)
	if got := int64(shortInfo["expires_at_unix"].(float64)); got != soon {
		t.Errorf("session of a key expiring at %d expires at %d", soon, got)
	}
	shortJar, shortCSRF := "voiceai_console="+shortCookie.Value, shortInfo["csrf_token"].(string)
	eventually(t, 10*time.Second, "an expired session is refused", func() bool {
		return call(t, s, "GET", "/v1/convai/agents", "", "", "Cookie", shortJar, "X-CSRF-Token", shortCSRF).Code == 401
	})
	wantError(t, keep(call(t, s, "GET", "/v1/convai/agents", "", "", "Cookie", shortJar, "X-CSRF-Token", shortCSRF)), 401, "console_session_expired")

	// Signing out clears the cookie.
	r = keep(call(t, s, "DELETE", api.ConsoleSessionPath, "", "", "Cookie", jar, "Origin", origin))
	if r.Code != 204 || !strings.Contains(r.Header.Get("Set-Cookie"), "Max-Age=0") {
		t.Errorf("sign out: %d %q", r.Code, r.Header.Get("Set-Cookie"))
	}

	for _, secret := range []string{adminKey, roKey, shortKey, cookie.Value, roCookie.Value} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the logs show a key or a session cookie")
		}
	}
	if !strings.Contains(logs.String(), api.ConsoleSessionPath) {
		t.Errorf("the logs were not captured")
	}
	for _, a := range answers {
		for _, secret := range []string{adminKey, roKey, shortKey} {
			if strings.Contains(string(a.Body), secret) || strings.Contains(strings.Join(a.Header.Values("Set-Cookie"), ";"), secret) {
				t.Errorf("an answer shows a key in plain form: %s %v", a.Body, a.Header)
			}
		}
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}
