package multiprocess

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// Finding 5 of issue 47, across processes: a console session signed out
// on one gateway process is refused at once, 401, by another, on the API
// and on /console/session; a key header still works.
func TestConsoleSignOutReachesEveryGatewayProcess(t *testing.T) {
	c := newCluster(t)
	c.start("identity")
	c.start("agents")
	gwA, gwB := c.gateway(), c.gateway()
	r := do(t, "POST", gwA+"/console/session", "", `{"api_key":"`+adminKey+`"}`, "Content-Type", "application/json")
	cookies := (&http.Response{Header: r.header}).Cookies()
	var info struct {
		CSRF string `json:"csrf_token"`
	}
	if r.code != 200 || len(cookies) != 1 || json.Unmarshal(r.body, &info) != nil || info.CSRF == "" {
		t.Fatalf("sign in: %d %s", r.code, r.body)
	}
	jar := "voiceai_console=" + cookies[0].Value
	if r := do(t, "GET", gwB+"/v1/convai/agents", "", "", "Cookie", jar, "X-CSRF-Token", info.CSRF); r.code != 200 {
		t.Fatalf("the session on the other process before sign-out: %d %s", r.code, r.body)
	}
	if r := do(t, "DELETE", gwA+"/console/session", "", "", "Cookie", jar); r.code != 204 {
		t.Fatalf("sign out: %d %s", r.code, r.body)
	}
	for name, gw := range map[string]string{"A": gwA, "B": gwB} {
		for _, path := range []string{"/v1/convai/agents", "/console/session"} {
			r := do(t, "GET", gw+path, "", "", "Cookie", jar, "X-CSRF-Token", info.CSRF)
			if r.code != 401 || !strings.Contains(string(r.body), `"console_session_ended"`) {
				t.Fatalf("gateway %s, %s after sign-out: %d %s", name, path, r.code, r.body)
			}
		}
	}
	if r := do(t, "GET", gwB+"/v1/convai/agents", adminKey, ""); r.code != 200 {
		t.Fatalf("the key itself after sign-out: %d %s", r.code, r.body)
	}
}
