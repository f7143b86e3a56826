package stack

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/mux"

	"github.com/voiceai-platform/voiceai/pkg/api"
)

// The official @elevenlabs/elevenlabs-js SDK, pointed at the stack,
// parses every response of the endpoints it covers (e2e/sdk), and its
// webhooks.constructEvent verifies the deliveries it receives (at
// 127.0.0.1, which the stack lets webhooks reach). Every operation we
// serve that the SDK has a method for is called through that method, and
// answered with success, at least once: the suite reaches the stack
// through a proxy that notes which operation each of the SDK's own
// requests named.
func TestOfficialSDK(t *testing.T) {
	t.Parallel()
	script := e2eSuite(t, "sdk")
	s := startAdmin(t, localHooks)
	// A conversation the platform has seen, for creating tickets on it.
	agent := newAgent(t, s, adminKey, "SDK tickets")
	publishConversation(t, s, "ws_default", "conversation_started", "conv_sdk", agent, time.Now())
	calls := newSDKCalls(t, s)
	runE2E(t, s, script, nil, "VOICEAI_BASE_URL="+calls.URL, "VOICEAI_E2E_AGENT_ID="+agent, "VOICEAI_E2E_CONVERSATION_ID=conv_sdk")

	ops := sdkOperations(t, filepath.Join(filepath.Dir(script), "node_modules", "@elevenlabs", "elevenlabs-js", "api"))
	var missed []string
	for _, op := range ops {
		if !calls.answered(op.Name) {
			missed = append(missed, op.Method+" "+op.Path+" ("+op.Name+")")
		}
	}
	if len(missed) > 0 {
		t.Errorf("%d of the %d operations the SDK has a method for were not called through it with success:\n%s",
			len(missed), len(ops), strings.Join(missed, "\n"))
	}
}

// sdkCalls is a proxy in front of a stack that notes the operations the
// SDK's requests (those with its X-Fern-SDK-Name header) named, and those
// answered with success.
type sdkCalls struct {
	*httptest.Server
	mu sync.Mutex
	ok map[string]bool // operation name
}

func newSDKCalls(t *testing.T, s *Stack) *sdkCalls {
	target, err := url.Parse("http://" + s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1 // a streamed answer passes as it comes
	router := mux.NewRouter().SkipClean(true)
	for _, op := range api.Operations {
		api.Route(router, op).Name(op.Name)
	}
	c := &sdkCalls{ok: map[string]bool{}}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m mux.RouteMatch
		if r.Header.Get("X-Fern-SDK-Name") == "" || !router.Match(r, &m) || m.Route == nil {
			proxy.ServeHTTP(w, r)
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		proxy.ServeHTTP(sw, r)
		if sw.status/100 == 2 {
			c.mu.Lock()
			c.ok[m.Route.GetName()] = true
			c.mu.Unlock()
		}
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *sdkCalls) answered(op string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ok[op]
}

// statusWriter notes the status a response was sent with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// sdkOperations are the operations of the table the SDK (its compiled
// clients under dir) has a method for: each client names the method and
// path template of its request where it reports an error.
func sdkOperations(t *testing.T, dir string) []api.Operation {
	t.Helper()
	named := regexp.MustCompile(`handleNonStatusCodeError\)\(_response\.error, _response\.rawResponse, "([A-Z]+)", "([^"]+)"\)`)
	has := map[string]bool{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() != "Client.js" {
			return err
		}
		src, err := os.ReadFile(path)
		for _, m := range named.FindAllStringSubmatch(string(src), -1) {
			has[m[1]+" "+anyVars(m[2])] = true
		}
		return err
	})
	if err != nil || len(has) < 100 {
		t.Fatalf("the SDK's clients under %s name %d requests (%v): the scan no longer reads them", dir, len(has), err)
	}
	var out []api.Operation
	for _, op := range api.Operations {
		if has[op.Method+" "+anyVars(op.Path)] {
			out = append(out, op)
		}
	}
	if len(out) == 0 {
		t.Fatal("the SDK has a method for none of our operations")
	}
	return slices.Clip(out)
}

var templateVar = regexp.MustCompile(`\{[^}]*\}`)

// anyVars writes each variable of a path template as {}: the SDK and the
// table name them differently.
func anyVars(template string) string { return templateVar.ReplaceAllString(template, "{}") }
