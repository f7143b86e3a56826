package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/mux"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/pkg/principal"
)

func TestOperationsAreUniqueAndEveryPathVarIsAnID(t *testing.T) {
	names, routes := map[string]bool{}, map[string]bool{}
	for _, op := range Operations {
		key := op.Method + " " + op.Path
		if names[op.Name] || routes[key] {
			t.Errorf("%s (%s) is defined twice", op.Name, key)
		}
		names[op.Name], routes[key] = true, true
		if op.Service == "" || len(op.Perms) == 0 {
			t.Errorf("%s has no service or no permission", op.Name)
		}
		for _, v := range op.Vars() {
			if _, ok := IDParams[v]; !ok {
				t.Errorf("%s: path variable %q is not in IDParams", op.Name, v)
			}
		}
	}
}

// Each operation's own path, with ids filled in, reaches that operation
// on a router built from the table: no earlier template shadows it.
func TestEveryOperationRoutesToItself(t *testing.T) {
	r := mux.NewRouter()
	for _, op := range Operations {
		name := op.Name
		Route(r, op).HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(name)) })
	}
	for _, op := range Operations {
		path := pathVar.ReplaceAllString(op.Path, "id_1")
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, httptest.NewRequest(op.Method, path, nil))
		if rec.Body.String() != op.Name {
			t.Errorf("%s %s reached %q, want %s", op.Method, path, rec.Body.String(), op.Name)
		}
		if op.Reads() {
			rec := httptest.NewRecorder()
			r.ServeHTTP(rec, httptest.NewRequest(http.MethodHead, path, nil))
			if rec.Code != http.StatusOK {
				t.Errorf("HEAD %s = %d", path, rec.Code)
			}
		}
	}
}

func TestHandleChecksPermissionIDsAndIdempotencyKey(t *testing.T) {
	var got string
	r := mux.NewRouter()
	Handle(r, GetAgent, func(c *Call) (any, error) { got = c.Caller().CommandID; return nil, nil })
	Handle(r, CreateAgent, func(c *Call) (any, error) { got = c.Caller().CommandID; return nil, nil })
	call := func(method, path, key string, perms ...string) *httptest.ResponseRecorder {
		got = "not called"
		req := httptest.NewRequest(method, path, nil)
		if key != "" {
			req.Header.Set(HeaderIdempotencyKey, key)
		}
		req = req.WithContext(principal.With(req.Context(), principal.Principal{WorkspaceID: "ws_a", Permissions: perms}))
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req)
		return rec
	}
	if rec := call("GET", "/v1/convai/agents/agent_1", "", "workspace_read"); rec.Code != 403 || got != "not called" {
		t.Errorf("without permission: %d, handler %q", rec.Code, got)
	}
	for _, bad := range []string{strings.Repeat("a", 129), "a.b", "a%20b", "%2A", "%3E", "caf%C3%A9", "a%00"} {
		rec := call("GET", "/v1/convai/agents/"+bad, "", "convai_read")
		if rec.Code != 404 || !strings.Contains(rec.Body.String(), `"agent_not_found"`) || got != "not called" {
			t.Errorf("id %q: %d %s, handler %q", bad, rec.Code, rec.Body, got)
		}
	}
	if rec := call("HEAD", "/v1/convai/agents/agent_1", "", "convai_read"); rec.Code != 200 || got != "" {
		t.Errorf("HEAD: %d, handler %q", rec.Code, got)
	}
	for _, bad := range []string{strings.Repeat("k", 256), "a b", "ключ"} {
		if rec := call("POST", "/v1/convai/agents/create", bad, "convai_write"); rec.Code != 422 || !strings.Contains(rec.Body.String(), `["header","Idempotency-Key"]`) {
			t.Errorf("key %q: %d %s", bad, rec.Code, rec.Body)
		}
	}
	call("POST", "/v1/convai/agents/create", "K", "convai_write")
	a := got
	if !strings.HasPrefix(a, "cmd_") || a != commandID("ws_a", CreateAgent.Name, "K") {
		t.Fatalf("command id %q", a)
	}
	if commandID("ws_b", CreateAgent.Name, "K") == a || commandID("ws_a", CreateTicket.Name, "K") == a {
		t.Error("the same key in another workspace or operation gave the same command id")
	}
}

// A malformed id in a query parameter that names one resource is answered
// as an unknown one of that kind; other *_id parameters stay 422.
func TestQueryIDParamsAnswerMalformedAsNotFound(t *testing.T) {
	for name, v := range QueryIDParams {
		if _, ok := IDParams[v]; !ok {
			t.Errorf("%s names %q, not in IDParams", name, v)
		}
	}
	cases := []struct {
		query string
		code  int
	}{
		{"baseline_invocation_id=tinv_1", 0},
		{"baseline_invocation_id=", 0},
		{"baseline_invocation_id=a.b", 404},
		{"agent_id=a.b", 422},
	}
	for _, c := range cases {
		req := httptest.NewRequest("GET", "/v1/convai/test-invocations/tinv_1?"+c.query, nil)
		err := checkQueryBounds(req)
		rec := httptest.NewRecorder()
		if err != nil {
			httpx.WriteError(rec, req, err)
		}
		if (err == nil) != (c.code == 0) || (err != nil && rec.Code != c.code) {
			t.Errorf("%s: %v (%d), want %d", c.query, err, rec.Code, c.code)
		}
		if c.code == 404 && !strings.Contains(rec.Body.String(), `"test_invocation_not_found"`) {
			t.Errorf("%s: %s", c.query, rec.Body)
		}
	}
}

// A query the parser cannot read whole is refused, not read without the
// pairs it could not read (the listing answered at its default size).
func TestMalformedQueryIsRefused(t *testing.T) {
	for _, q := range []string{"page_size=1;x=2", "page_size=%zz", "search=a%"} {
		req := httptest.NewRequest("GET", "/v1/convai/agents?"+q, nil)
		rec := httptest.NewRecorder()
		httpx.WriteError(rec, req, checkQueryBounds(req))
		if rec.Code != 422 || !strings.Contains(rec.Body.String(), `"loc":["query"]`) {
			t.Errorf("%s: %d %s", q, rec.Code, rec.Body)
		}
	}
	if err := checkQueryBounds(httptest.NewRequest("GET", "/v1/convai/agents?page_size=1&search=a%25b", nil)); err != nil {
		t.Errorf("a well-formed query: %v", err)
	}
	// Bytes a body's string may not hold, a query's may not either.
	for _, q := range []string{"search=%00", "search=%ff", "search=ok%c3"} {
		req := httptest.NewRequest("GET", "/v1/convai/agents?"+q, nil)
		rec := httptest.NewRecorder()
		httpx.WriteError(rec, req, checkQueryBounds(req))
		if rec.Code != 422 || !strings.Contains(rec.Body.String(), `"loc":["query","search"]`) {
			t.Errorf("%s: %d %s", q, rec.Code, rec.Body)
		}
	}
	if err := checkQueryBounds(httptest.NewRequest("GET", "/v1/convai/agents?search=caf%C3%A9%20%E2%9C%93", nil)); err != nil {
		t.Errorf("UTF-8 text: %v", err)
	}
}

// A write's body in a coding other than identity is refused with 415,
// not read as JSON as it is; a read has no body to code.
func TestCodedBodyIsRefused(t *testing.T) {
	for _, c := range []struct {
		method, coding string
		code           int
	}{
		{"POST", "gzip", 415}, {"PATCH", "br", 415}, {"DELETE", "deflate, gzip", 415},
		{"POST", strings.Repeat("x", 60000), 415}, {"POST", "identity", 0}, {"POST", " Identity ", 0}, {"POST", "", 0}, {"GET", "gzip", 0},
	} {
		req := httptest.NewRequest(c.method, "/v1/convai/agents/create", strings.NewReader(`{}`))
		if c.coding != "" {
			req.Header.Set("Content-Encoding", c.coding)
		}
		err := CheckRequest(req)
		rec := httptest.NewRecorder()
		if err != nil {
			httpx.WriteError(rec, req, err)
		}
		if (err == nil) != (c.code == 0) || (err != nil && rec.Code != c.code) {
			t.Errorf("%s with %q: %v (%d), want %d", c.method, c.coding, err, rec.Code, c.code)
		}
		if c.code == 415 && (!strings.Contains(rec.Body.String(), `"status":"unsupported_content_encoding"`) || rec.Body.Len() > 400) {
			t.Errorf("%s with %q: %s", c.method, c.coding, rec.Body)
		}
	}
}

// An Idempotency-Key header is one key of 1 to 255 visible ASCII
// characters: one sent empty or twice is a 422, not a write without a key.
func TestIdempotencyKeyHeader(t *testing.T) {
	for _, c := range []struct {
		keys []string // nil: no header
		ok   bool
	}{
		{nil, true}, {[]string{"k-1"}, true}, {[]string{strings.Repeat("k", 255)}, true},
		{[]string{""}, false}, {[]string{"   "}, false}, {[]string{"a b"}, false}, {[]string{"ключ"}, false},
		{[]string{strings.Repeat("k", 256)}, false}, {[]string{"k-1", "k-1"}, false}, {[]string{"k-1", "k-2"}, false},
	} {
		req := httptest.NewRequest("POST", "/v1/convai/agents/create", strings.NewReader(`{}`))
		for _, k := range c.keys {
			req.Header.Add(HeaderIdempotencyKey, k)
		}
		err := CheckRequest(req)
		rec := httptest.NewRecorder()
		if err != nil {
			httpx.WriteError(rec, req, err)
		}
		if (err == nil) != c.ok || (err != nil && (rec.Code != 422 || !strings.Contains(rec.Body.String(), `"loc":["header","Idempotency-Key"]`))) {
			t.Errorf("%q: %v (%d %s)", c.keys, err, rec.Code, rec.Body)
		}
	}
}

// A handler's returned error is answered in the spec's error shape.
func TestHandleAnswersTheHandlersError(t *testing.T) {
	r := mux.NewRouter()
	Handle(r, GetAgent, func(*Call) (any, error) {
		return nil, apperr.AgentNotFound
	})
	req := httptest.NewRequest("GET", "/v1/convai/agents/agent_01m86ww2r90bbq1x2gamt6cq1w", nil)
	req = req.WithContext(principal.With(req.Context(), principal.Principal{WorkspaceID: "ws_a", Permissions: []string{"convai_read"}}))
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	if w.Code != 404 || !strings.Contains(w.Body.String(), `"status":"agent_not_found"`) {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
}

// A relay poll takes the delivery it answers: it is the operation the
// gateway must never send twice, and the only one.
func TestOnlyTheRelayPollTakesWhatItAnswers(t *testing.T) {
	for _, op := range Operations {
		if op.Takes != (op.Name == RelayNext.Name) {
			t.Errorf("%s: takes %v", op.Name, op.Takes)
		}
	}
}

// The gateway may send a read twice, a write only with an Idempotency-Key
// (every write honours one but those marked Once, each with its reason),
// and a poll that takes what it answers never.
func TestRepeatableFollowsTheOperation(t *testing.T) {
	once := map[string]bool{TestWebhook.Name: true, CreateKey.Name: true, SimulateConversation.Name: true}
	for _, op := range Operations {
		plain := httptest.NewRequest(op.Method, "/", nil)
		keyed := httptest.NewRequest(op.Method, "/", nil)
		keyed.Header.Set(HeaderIdempotencyKey, "k")
		reads := op.Reads() || op.Safe
		never := op.Takes || op.Once != ""
		if (op.Once != "") != once[op.Name] {
			t.Errorf("%s: once %q", op.Name, op.Once)
		}
		if got := op.Repeatable(plain); got != (reads && !never) {
			t.Errorf("%s without a key: repeatable %v", op.Name, got)
		}
		if got := op.Repeatable(keyed); got != !never {
			t.Errorf("%s with a key: repeatable %v", op.Name, got)
		}
		if op.Safe && op.Method == http.MethodGet {
			t.Errorf("%s: a GET needs no Safe mark", op.Name)
		}
	}
	if !TestSummaries.Safe || RelayNext.Repeatable(httptest.NewRequest(RelayNext.Method, "/", nil)) {
		t.Error("test summaries only read; a relay poll takes a delivery")
	}
}
