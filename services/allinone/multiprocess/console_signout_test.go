package multiprocess

import (
	"encoding/json"
	"io"
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
	send := func(method, url, body string, headers ...string) (int, []byte, http.Header) {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, _ := http.NewRequest(method, url, rd)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b, resp.Header
	}
	code, body, header := send("POST", gwA+"/console/session", `{"api_key":"`+adminKey+`"}`, "Content-Type", "application/json")
	cookies := (&http.Response{Header: header}).Cookies()
	var info struct {
		CSRF string `json:"csrf_token"`
	}
	if code != 200 || len(cookies) != 1 || json.Unmarshal(body, &info) != nil || info.CSRF == "" {
		t.Fatalf("sign in: %d %s", code, body)
	}
	jar := "voiceai_console=" + cookies[0].Value
	if code, body, _ := send("GET", gwB+"/v1/convai/agents", "", "Cookie", jar, "X-CSRF-Token", info.CSRF); code != 200 {
		t.Fatalf("the session on the other process before sign-out: %d %s", code, body)
	}
	if code, body, _ := send("DELETE", gwA+"/console/session", "", "Cookie", jar); code != 204 {
		t.Fatalf("sign out: %d %s", code, body)
	}
	for name, gw := range map[string]string{"A": gwA, "B": gwB} {
		for _, path := range []string{"/v1/convai/agents", "/console/session"} {
			code, body, _ := send("GET", gw+path, "", "Cookie", jar, "X-CSRF-Token", info.CSRF)
			if code != 401 || !strings.Contains(string(body), `"console_session_ended"`) {
				t.Fatalf("gateway %s, %s after sign-out: %d %s", name, path, code, body)
			}
		}
	}
	if r := do(t, "GET", gwB+"/v1/convai/agents", adminKey, ""); r.code != 200 {
		t.Fatalf("the key itself after sign-out: %d %s", r.code, r.body)
	}
}
