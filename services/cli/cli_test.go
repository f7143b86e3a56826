package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// fakeAPI answers the routes a test sets, by "METHOD /path", and records
// every request.
type fakeAPI struct {
	t        *testing.T
	mu       sync.Mutex
	routes   map[string]http.HandlerFunc
	requests []*http.Request
	bodies   []string
}

func newFake(t *testing.T) (*fakeAPI, string) {
	f := &fakeAPI{t: t, routes: map[string]http.HandlerFunc{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.requests = append(f.requests, r)
		f.bodies = append(f.bodies, string(b))
		h := f.routes[r.Method+" "+r.URL.Path]
		f.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		if h == nil {
			w.WriteHeader(404)
			fmt.Fprintf(w, `{"detail":{"status":"route_not_found","message":"No route matches %s %s.","request_id":"req_1"}}`, r.Method, r.URL.Path)
			return
		}
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func (f *fakeAPI) on(route string, h http.HandlerFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routes[route] = h
}

// lastBody is the body of the last request the fake received.
func (f *fakeAPI) lastBody() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bodies[len(f.bodies)-1]
}

// lastJSON is lastBody decoded as a JSON object (nil if it is none).
func (f *fakeAPI) lastJSON() map[string]any {
	var body map[string]any
	_ = json.Unmarshal([]byte(f.lastBody()), &body)
	return body
}

// reply answers a fixed status and body.
func reply(code int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

type result struct {
	code           int
	stdout, stderr string
}

func run(t *testing.T, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(context.Background(), args, &out, &errOut)
	return result{code, out.String(), errOut.String()}
}

// runOn runs the CLI with args against the fake API at base, with its key.
func runOn(t *testing.T, base string, args ...string) result {
	t.Helper()
	return run(t, slices.Concat(args, []string{"--api-key", "k", "--base-url", base})...)
}

func TestHelpNeedsNoServerNorKey(t *testing.T) {
	t.Setenv("VOICEAI_API_KEY", "")
	t.Setenv("VOICEAI_BASE_URL", "http://127.0.0.1:1") // nothing listens there
	for _, args := range [][]string{{"--help"}, {"tests", "run", "--help"}, {"keys", "--help"}, {}} {
		r := run(t, args...)
		if r.code != ExitOK || !strings.Contains(r.stdout, "Usage:") {
			t.Fatalf("%v: exit %d, stdout %q stderr %q", args, r.code, r.stdout, r.stderr)
		}
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	t.Setenv("VOICEAI_API_KEY", "k")
	for _, args := range [][]string{
		{"bogus"},
		{"agents", "list", "--nope"},
		{"agents", "show"}, // missing id
		{"tests", "run"},   // --agent is required
		{"tests", "run", "--agent", "a", "--junit", "x.xml"}, // --junit without --wait
		{"tests", "rnu"}, {"members", "lisst"}, {"webhooks"}, // no command of the group's
	} {
		if r := run(t, args...); r.code != ExitError || !strings.Contains(r.stderr, "error:") {
			t.Fatalf("%v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	if r := run(t, "tests", "rnu"); !strings.Contains(r.stderr, `did you mean run?`) {
		t.Fatalf("a mistyped command: %q", r.stderr)
	}
}

func TestConfigFromEnvAndFlags(t *testing.T) {
	f, base := newFake(t)
	f.on("GET /v1/convai/agents", reply(200, `{"agents":[{"agent_id":"agent_1","name":"Support","tags":["a"],"created_at_unix_secs":1767322000}],"has_more":true,"next_cursor":"c2"}`))

	t.Run("no key", func(t *testing.T) {
		t.Setenv("VOICEAI_API_KEY", "")
		t.Setenv("VOICEAI_BASE_URL", base)
		r := run(t, "agents", "list")
		if r.code != ExitError || !strings.Contains(r.stderr, "VOICEAI_API_KEY") {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
	t.Run("bad base URL", func(t *testing.T) {
		r := run(t, "agents", "list", "--api-key", "k", "--base-url", "ftp://x")
		if r.code != ExitError || !strings.Contains(r.stderr, "not an http(s) URL") {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
	t.Run("env", func(t *testing.T) {
		t.Setenv("VOICEAI_API_KEY", "env-key")
		t.Setenv("VOICEAI_BASE_URL", base+"/")
		r := run(t, "agents", "list")
		if r.code != ExitOK || !strings.Contains(r.stdout, "agent_1") || !strings.Contains(r.stdout, "Support") {
			t.Fatalf("exit %d, stdout %q stderr %q", r.code, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stderr, "--cursor c2") {
			t.Fatalf("no next-page hint: %q", r.stderr)
		}
		req := f.requests[len(f.requests)-1]
		if req.Header.Get("x-api-key") != "env-key" || req.URL.Query().Get("page_size") != "30" {
			t.Fatalf("request %v %v", req.Header, req.URL)
		}
	})
	t.Run("flags win", func(t *testing.T) {
		t.Setenv("VOICEAI_API_KEY", "env-key")
		t.Setenv("VOICEAI_BASE_URL", "http://127.0.0.1:1")
		r := run(t, "--api-key", "flag-key", "--base-url", base, "agents", "list", "--search", "sup", "--json")
		if r.code != ExitOK || !strings.HasPrefix(r.stdout, `{"agents":[`) {
			t.Fatalf("exit %d, stdout %q stderr %q", r.code, r.stdout, r.stderr)
		}
		req := f.requests[len(f.requests)-1]
		if req.Header.Get("x-api-key") != "flag-key" || req.URL.Query().Get("search") != "sup" {
			t.Fatalf("request %v %v", req.Header, req.URL)
		}
	})
}

func TestServerErrorsArePrinted(t *testing.T) {
	f, base := newFake(t)
	f.on("GET /v1/convai/agents/agent_x", reply(404, `{"detail":{"status":"agent_not_found","message":"No agent agent_x.","request_id":"req_9"}}`))
	f.on("GET /v1/convai/agent-testing", reply(422, `{"detail":[{"loc":["query","page_size"],"msg":"Input should be less than or equal to 100","type":"less_than_equal"}]}`))
	f.on("GET /v1/convai/webhooks", reply(401, `{"detail":"Invalid API key"}`))
	f.on("GET /v1/convai/triage-tickets", reply(502, `<html>bad gateway</html>`))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"agents", "show", "agent_x"}, "error: No agent agent_x. (HTTP 404, agent_not_found, request id req_9)"},
		{[]string{"tests", "list", "--page-size", "500"}, "query.page_size: Input should be less than or equal to 100"},
		{[]string{"webhooks", "list"}, "error: Invalid API key (HTTP 401)"},
		{[]string{"tickets", "list"}, "<html>bad gateway</html> (HTTP 502)"},
	} {
		r := runOn(t, base, c.args...)
		if r.code != ExitError || !strings.Contains(r.stderr, c.want) || r.stdout != "" {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q, want %q", c.args, r.code, r.stdout, r.stderr, c.want)
		}
	}
}

func TestRetriesA503WithTheSameIdempotencyKey(t *testing.T) {
	f, base := newFake(t)
	var mu sync.Mutex
	var keys []string
	f.on("POST /v1/convai/webhooks", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		if len(keys) == 1 {
			w.Header().Set("Retry-After", "0")
			reply(503, `{"detail":{"status":"service_unavailable","message":"retry","request_id":null}}`)(w, r)
			return
		}
		reply(201, `{"webhook_id":"whk_1","url":"https://example.com/h","events":["call_ended"],"active":true,"secret":"whsec_s"}`)(w, r)
	})
	r := runOn(t, base, "webhooks", "create", "--url", "https://example.com/h", "--event", "call_ended")
	if r.code != ExitOK || !strings.Contains(r.stdout, "whsec_s") {
		t.Fatalf("exit %d, stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] {
		t.Fatalf("idempotency keys %q", keys)
	}
	if body := f.lastJSON(); body["url"] != "https://example.com/h" || body["active"] != true || fmt.Sprint(body["events"]) != "[call_ended]" {
		t.Fatalf("body %v", body)
	}
}

// invocationServer plays a run-tests invocation whose runs finish one per
// GET, ending with the given statuses; it also serves the JUnit form.
func invocationServer(t *testing.T, f *fakeAPI, statuses ...string) {
	runs := func(done int) string {
		parts := make([]string, len(statuses))
		for i, s := range statuses {
			if i >= done {
				s = "pending"
			}
			parts[i] = fmt.Sprintf(`{"test_run_id":"trun_%d","test_id":"test_%d","test_name":"T%d","status":%q,
			  "condition_result":{"result":"x","rationale":{"messages":["m"],"summary":"why %d"}},"model_usage":{"model":"judge-m"}}`, i, i, i, s, i)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	f.on("POST /v1/convai/agents/agent_1/run-tests", func(w http.ResponseWriter, r *http.Request) {
		reply(200, `{"id":"tinv_1","agent_id":"agent_1","status":"running","test_runs":`+runs(0)+`}`)(w, r)
	})
	var mu sync.Mutex
	gets := 0
	f.on("GET /v1/convai/test-invocations/tinv_1", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("format") == "junit" {
			w.Header().Set("Content-Type", "application/xml; charset=utf-8")
			io.WriteString(w, `<testsuites failures="1"></testsuites>`)
			return
		}
		mu.Lock()
		gets++
		done := min(gets, len(statuses))
		mu.Unlock()
		status := "running"
		if done == len(statuses) {
			status = "completed"
		}
		reply(200, `{"id":"tinv_1","agent_id":"agent_1","status":"`+status+`","test_runs":`+runs(done)+`}`)(w, r)
	})
}

func TestTestsRunWait(t *testing.T) {
	t.Run("all pass", func(t *testing.T) {
		f, base := newFake(t)
		invocationServer(t, f, "passed", "passed")
		r := runOn(t, base, "tests", "run", "--agent", "agent_1", "--test", "test_0", "--test", "test_1", "--wait", "--poll", "1ms")
		if r.code != ExitOK || !strings.Contains(r.stdout, "2 passed, 0 failed of 2 run(s)") {
			t.Fatalf("exit %d, stdout %q stderr %q", r.code, r.stdout, r.stderr)
		}
		// Not a terminal: plain progress lines, one per change.
		if !strings.Contains(r.stderr, "tinv_1: 1/2 runs finished (1 passed, 0 failed)") || !strings.Contains(r.stderr, "tinv_1: 2/2 runs finished") {
			t.Fatalf("progress %q", r.stderr)
		}
		var body struct {
			Tests       []map[string]string `json:"tests"`
			RepeatCount int                 `json:"repeat_count"`
		}
		_ = json.Unmarshal([]byte(f.bodies[0]), &body)
		if len(body.Tests) != 2 || body.Tests[0]["test_id"] != "test_0" || body.Tests[1]["test_id"] != "test_1" || body.RepeatCount != 1 {
			t.Fatalf("run-tests body %s", f.bodies[0])
		}
	})
	t.Run("a failure, JUnit written", func(t *testing.T) {
		f, base := newFake(t)
		invocationServer(t, f, "passed", "failed")
		junit := filepath.Join(t.TempDir(), "junit.xml")
		r := runOn(t, base, "tests", "run", "--agent", "agent_1", "--test", "test_0", "--test", "test_1", "--wait", "--poll", "1ms", "--junit", junit)
		if r.code != ExitFailed || !strings.Contains(r.stdout, "1 passed, 1 failed of 2 run(s)") || !strings.Contains(r.stdout, "why 1") {
			t.Fatalf("exit %d, stdout %q stderr %q", r.code, r.stdout, r.stderr)
		}
		if b, err := os.ReadFile(junit); err != nil || string(b) != `<testsuites failures="1"></testsuites>` {
			t.Fatalf("junit %q %v", b, err)
		}
	})
	t.Run("JUnit path that cannot be written", func(t *testing.T) {
		f, base := newFake(t)
		invocationServer(t, f, "passed")
		junit := filepath.Join(t.TempDir(), "nonexistent", "j.xml")
		r := runOn(t, base, "tests", "run", "--agent", "agent_1", "--test", "test_0", "--wait", "--poll", "1ms", "--junit", junit)
		if r.code != ExitError || !strings.Contains(r.stderr, "error: --junit "+junit+": cannot write a file in") || len(f.requests) != 0 {
			t.Fatalf("exit %d, stderr %q, %d requests", r.code, r.stderr, len(f.requests))
		}
	})
	t.Run("JUnit write failing at the end: the summary first", func(t *testing.T) {
		f, base := newFake(t)
		invocationServer(t, f, "passed")
		dir := t.TempDir()
		junit := filepath.Join(dir, "j.xml")
		f.on("POST /v1/convai/agents/agent_1/run-tests", func(w http.ResponseWriter, r *http.Request) {
			os.Mkdir(junit, 0o755) // the path becomes a folder once the run has started
			reply(200, `{"id":"tinv_1","agent_id":"agent_1","status":"running","test_runs":[{"status":"pending"}]}`)(w, r)
		})
		r := runOn(t, base, "tests", "run", "--agent", "agent_1", "--test", "test_0", "--wait", "--poll", "1ms", "--junit", junit)
		if r.code != ExitError || !strings.Contains(r.stdout, "1 passed, 0 failed of 1 run(s)") || strings.Contains(r.stdout, "JUnit report:") ||
			!strings.Contains(r.stderr, "error: writing the JUnit report: ") {
			t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("json", func(t *testing.T) {
		f, base := newFake(t)
		invocationServer(t, f, "failed")
		r := runOn(t, base, "tests", "run", "--agent", "agent_1", "--test", "test_0", "--wait", "--poll", "1ms", "--json")
		var inv invocation
		if err := json.Unmarshal([]byte(r.stdout), &inv); r.code != ExitFailed || err != nil || inv.Status != "completed" {
			t.Fatalf("exit %d, stdout %q: %v", r.code, r.stdout, err)
		}
	})
	t.Run("time-out", func(t *testing.T) {
		f, base := newFake(t)
		invocationServer(t, f, "passed")
		f.on("GET /v1/convai/test-invocations/tinv_1", reply(200, `{"id":"tinv_1","status":"running","test_runs":[{"status":"pending"}]}`))
		r := runOn(t, base, "tests", "run", "--agent", "agent_1", "--test", "test_0", "--wait", "--poll", "1ms", "--timeout", "50ms")
		if r.code != ExitError || !strings.Contains(r.stderr, "timed out after 50ms waiting for invocation tinv_1") {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
	t.Run("without --wait", func(t *testing.T) {
		f, base := newFake(t)
		invocationServer(t, f, "passed")
		r := runOn(t, base, "tests", "run", "--agent", "agent_1", "--test", "test_0")
		if r.code != ExitOK || !strings.Contains(r.stdout, "Started invocation tinv_1") || len(f.requests) != 1 {
			t.Fatalf("exit %d, stdout %q, %d requests", r.code, r.stdout, len(f.requests))
		}
	})
	t.Run("unknown agent", func(t *testing.T) {
		f, base := newFake(t)
		f.on("POST /v1/convai/agents/nope/run-tests", reply(404, `{"detail":{"status":"agent_not_found","message":"No agent has this id.","request_id":"r"}}`))
		r := runOn(t, base, "tests", "run", "--agent", "nope", "--test", "t", "--wait")
		if r.code != ExitError || !strings.Contains(r.stderr, "No agent has this id.") {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
}

// Without --test every test of the workspace runs, across pages and
// folders, oldest first; folders are not tests.
func TestTestsRunAllTests(t *testing.T) {
	f, base := newFake(t)
	invocationServer(t, f, "passed")
	f.on("GET /v1/convai/agent-testing", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("cursor") == "" {
			reply(200, `{"tests":[{"id":"test_new","entity_type":"test"},{"id":"tfld_1","entity_type":"folder"}],"has_more":true,"next_cursor":"p2"}`)(w, r)
			return
		}
		reply(200, `{"tests":[{"id":"test_old","entity_type":"test"}],"has_more":false,"next_cursor":null}`)(w, r)
	})
	r := runOn(t, base, "tests", "run", "--agent", "agent_1")
	if r.code != ExitOK {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if got := f.lastBody(); got != `{"repeat_count":1,"tests":[{"test_id":"test_old"},{"test_id":"test_new"}]}` {
		t.Fatalf("run-tests body %s", got)
	}

	f.on("GET /v1/convai/agent-testing", reply(200, `{"tests":[],"has_more":false,"next_cursor":null}`))
	if r := runOn(t, base, "tests", "run", "--agent", "agent_1"); r.code != ExitError || !strings.Contains(r.stderr, "no tests") {
		t.Fatalf("empty workspace: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestTicketsAssign(t *testing.T) {
	f, base := newFake(t)
	f.on("PATCH /v1/convai/triage-tickets/tkt_1", func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		a, _ := json.Marshal(body["assignee_user_id"])
		reply(200, `{"agentqa_ticket_id":"tkt_1","status":"open","assignee_user_id":`+string(a)+`}`)(w, r)
	})
	if r := runOn(t, base, "tickets", "assign", "tkt_1", "usr_1"); r.code != 0 || r.stdout != "Ticket tkt_1 is assigned to usr_1.\n" {
		t.Fatalf("assign: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := runOn(t, base, "tickets", "assign", "tkt_1", "none"); r.code != 0 || r.stdout != "Ticket tkt_1 is unassigned.\n" {
		t.Fatalf("unassign: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if got := f.lastBody(); got != `{"assignee_user_id":null}` {
		t.Fatalf("unassign body %s", got)
	}
}

// tickets show prints the ticket's comments, on the whole and on turns.
func TestTicketsShowPrintsEveryComment(t *testing.T) {
	f, base := newFake(t)
	f.on("GET /v1/convai/triage-tickets/tkt_1", reply(200, `{"agentqa_ticket_id":"tkt_1","status":"open","agent_id":"agent_1","title":"Wrong hours",
	  "ticket_comments":[{"comment":"looking into it","created_at_unix_secs":1767322000,"owner_user_id":"usr_1"}],
	  "turn_comments":[{"turn_index":3,"comment":"quoted last year's hours","created_at_unix_secs":1767322100,"owner_user_id":"usr_2"}]}`))
	r := runOn(t, base, "tickets", "show", "tkt_1")
	if r.code != 0 || !strings.Contains(r.stdout, "usr_1: looking into it") || !strings.Contains(r.stdout, "usr_2 on turn 3: quoted last year's hours") {
		t.Fatalf("%d %q %q", r.code, r.stdout, r.stderr)
	}
}

// tickets show says where a merged ticket went, when its conversation was
// seen, the failing test behind it and its history, oldest first.
func TestTicketsShowPrintsWhereItWentAndItsHistory(t *testing.T) {
	f, base := newFake(t)
	f.on("GET /v1/convai/triage-tickets/tkt_2", reply(200, `{"agentqa_ticket_id":"tkt_2","status":"merged","merged_into_ticket_id":"tkt_1","agent_id":"agent_1","title":"Refund window",
	  "first_seen_unix_secs":1767320000,"last_seen_unix_secs":1767321000,
	  "test_failures":{"test_id":"test_9","test_name":"Refunds","failed_runs":4,"invocations":[{"invocation_id":"tinv_1","run_ids":["r1"],"failed_runs":4,"last_failed_at_unix_secs":1767321000}]},
	  "status_changes":[{"status":"open","changed_by_user_id":"usr_1","changed_at_unix_secs":1767320000},{"status":"merged","changed_by_user_id":"usr_2","changed_at_unix_secs":1767322000}],
	  "priority_changes":[{"priority":"high","changed_by_user_id":"usr_1","changed_at_unix_secs":1767321000}]}`))
	r := runOn(t, base, "tickets", "show", "tkt_2")
	for _, want := range []string{"Merged into:", "tkt_1", "Failing test:", "Refunds (test_9): 4 failed runs in 1 invocations", "Seen:",
		"History:\n  2026-01-02 02:13Z usr_1: status open\n  2026-01-02 02:30Z usr_1: priority high\n  2026-01-02 02:46Z usr_2: status merged\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("missing %q in %q (%d %q)", want, r.stdout, r.code, r.stderr)
		}
	}
}

func TestTicketsListFilters(t *testing.T) {
	f, base := newFake(t)
	f.on("GET /v1/convai/triage-tickets", reply(200, `{"agent_conversation_tickets":[{"agentqa_ticket_id":"tkt_1","status":"open","agent_id":"agent_1","title":"Wrong hours","assignee_user_id":null}],"has_more":false}`))
	r := runOn(t, base, "tickets", "list", "--status", "open", "--assignee", "unassigned", "--priority", "high", "--priority", "urgent")
	if r.code != 0 || !strings.Contains(r.stdout, "tkt_1") || !strings.Contains(r.stdout, "Wrong hours") {
		t.Fatalf("%d %q %q", r.code, r.stdout, r.stderr)
	}
	q := f.requests[0].URL.Query()
	if q.Get("status") != "open" || q.Get("assignee_user_id") != "unassigned" || strings.Join(q["priorities"], ",") != "high,urgent" || q.Has("agent_id") {
		t.Fatalf("query %v", q)
	}
	// "none", as tickets assign takes it, lists the unassigned tickets.
	runOn(t, base, "tickets", "list", "--assignee", "none")
	if q := f.requests[1].URL.Query(); q.Get("assignee_user_id") != "unassigned" {
		t.Fatalf("--assignee none: query %v", q)
	}
}

func TestKeys(t *testing.T) {
	f, base := newFake(t)
	f.on("GET /v1/service-accounts", reply(200, `{"service-accounts":[{"service_account_user_id":"sa_1","name":"ci","api-keys":[
	  {"key_id":"key_1","name":"deploy","hint":"vak_ab","service_account_user_id":"sa_1","permissions":["convai_read"],"is_disabled":false}]}]}`))
	f.on("DELETE /v1/service-accounts/sa_1/api-keys/key_1", reply(200, `{"key_id":"key_1","revoked":true}`))
	f.on("POST /v1/service-accounts/sa_1/api-keys", reply(200, `{"xi-api-key":"vak_secret","key_id":"key_2"}`))

	if r := runOn(t, base, "keys", "list"); r.code != 0 || !strings.Contains(r.stdout, "key_1") || !strings.Contains(r.stdout, "convai_read") {
		t.Fatalf("list: %d %q %q", r.code, r.stdout, r.stderr)
	}
	// The account is looked up from the key id.
	if r := runOn(t, base, "keys", "revoke", "key_1"); r.code != 0 || r.stdout != "Revoked key key_1.\n" {
		t.Fatalf("revoke: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := runOn(t, base, "keys", "revoke", "key_9"); r.code != ExitError || !strings.Contains(r.stderr, "no API key key_9") {
		t.Fatalf("revoke unknown: %d %q", r.code, r.stderr)
	}
	r := runOn(t, base, "keys", "create", "--account", "sa_1", "--name", "n", "--permissions", "all")
	if body := f.lastBody(); r.code != 0 || !strings.Contains(r.stdout, "vak_secret") || body != `{"name":"n","permissions":"all"}` {
		t.Fatalf("create: %d %q %q body %s", r.code, r.stdout, r.stderr, body)
	}
	r = runOn(t, base, "keys", "create", "--account", "sa_1", "--name", "n", "--permissions", "convai_read,convai_write")
	if body := f.lastBody(); r.code != 0 || body != `{"name":"n","permissions":["convai_read","convai_write"]}` {
		t.Fatalf("create: %d %q body %s", r.code, r.stderr, body)
	}
}

func TestPathIdsAreEscaped(t *testing.T) {
	if got := revokeKey.path("sa/1", "k?x"); got != "/v1/service-accounts/sa%2F1/api-keys/k%3Fx" {
		t.Fatal(got)
	}
}

func TestNetworkErrorExit2(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close() // nothing listens there any more
	r := runOn(t, base, "agents", "list")
	if r.code != ExitError || !strings.Contains(r.stderr, "error: GET "+base+": ") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}

// Ctrl-C while waiting: exit 2, saying the invocation goes on.
func TestTestsRunInterrupted(t *testing.T) {
	f, base := newFake(t)
	invocationServer(t, f, "passed")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.on("GET /v1/convai/test-invocations/tinv_1", func(w http.ResponseWriter, r *http.Request) {
		cancel() // as the signal handler of main does
		reply(200, `{"id":"tinv_1","status":"running","test_runs":[{"status":"pending"}]}`)(w, r)
	})
	var out, errOut bytes.Buffer
	code := Run(ctx, []string{"tests", "run", "--agent", "agent_1", "--test", "test_0", "--wait", "--api-key", "k", "--base-url", base}, &out, &errOut)
	if code != ExitError || !strings.Contains(errOut.String(), "interrupted while waiting for invocation tinv_1") {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
}

// The delivery log tells how to get older attempts, and sends the cursor
// back with the filters.
func TestWebhookLogsPages(t *testing.T) {
	f, base := newFake(t)
	f.on("GET /v1/voiceai/webhooks/whk_1/logs", reply(200, `{"webhook_id":"whk_1","recent_deliveries":[{"timestamp":"2026-11-30T03:00:00.000Z","event":"call_ended","status":"failed","response_code":500,"retry_count":0,"error":"HTTP 500","delivery_id":"dlv_1"}],"has_more":true,"next_cursor":"l2"}`))
	r := runOn(t, base, "webhooks", "logs", "whk_1", "--status", "failed", "--limit", "1")
	if r.code != 0 || !strings.Contains(r.stdout, "dlv_1") || r.stderr != "more results: add --cursor l2\n" {
		t.Fatalf("%d %q %q", r.code, r.stdout, r.stderr)
	}
	runOn(t, base, "webhooks", "logs", "whk_1", "--status", "failed", "--cursor", "l2")
	if q := f.requests[1].URL.Query(); q.Get("cursor") != "l2" || q.Get("status") != "failed" {
		t.Fatalf("second query %v", q)
	}
}

// A listing tells on stderr how to get its next page, and sends the
// cursor it is given back with the page size.
func TestListingPages(t *testing.T) {
	f, base := newFake(t)
	f.on("GET /v1/convai/agents", reply(200, `{"agents":[{"agent_id":"agent_1","name":"Support","tags":["a","b"],"created_at_unix_secs":1700000000,"last_call_time_unix_secs":1800000000}],"has_more":true,"next_cursor":"c2"}`))
	r := runOn(t, base, "agents", "list", "--search", "sup", "--page-size", "1")
	if r.code != 0 || !strings.Contains(r.stdout, "agent_1") || !strings.Contains(r.stdout, "a,b") || !strings.Contains(r.stdout, "2027-01-15 08:00Z") || r.stderr != "more results: add --cursor c2\n" {
		t.Fatalf("%d %q %q", r.code, r.stdout, r.stderr)
	}
	runOn(t, base, "agents", "list", "--cursor", "c2", "--page-size", "1")
	first, second := f.requests[0].URL.Query(), f.requests[1].URL.Query()
	if first.Get("search") != "sup" || first.Has("cursor") || second.Get("cursor") != "c2" || second.Get("page_size") != "1" || second.Has("search") {
		t.Fatalf("queries %v then %v", first, second)
	}
}

// A zero or negative --poll or --timeout, or a negative duration of any
// flag, is a usage error before anything is sent (a zero --poll panicked
// after the invocation had started; a negative --since was ignored).
func TestBadDurationsAreUsageErrors(t *testing.T) {
	f, base := newFake(t)
	invocationServer(t, f, "passed")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tests", "run", "--agent", "agent_1", "--test", "t", "--wait", "--poll", "0s"}, "--poll 0s: must be more than 0"},
		{[]string{"tests", "run", "--agent", "agent_1", "--test", "t", "--wait", "--timeout", "-1m"}, "--timeout -1m0s: a duration cannot be negative"},
		{[]string{"tests", "load", "--agent", "agent_1", "--test", "t", "--steps", "1", "--wait", "--poll", "-1s"}, "--poll -1s: a duration cannot be negative"},
		{[]string{"tests", "load", "--agent", "agent_1", "--test", "t", "--steps", "1", "--wait", "--timeout", "0s"}, "--timeout 0s: must be more than 0"},
		{[]string{"conversations", "list", "--since", "-1h"}, "--since -1h0m0s: a duration cannot be negative (write --since 1h0m0s)"},
		{[]string{"conversations", "list", "--until", "-1h"}, "--until -1h0m0s: a duration cannot be negative"},
		{[]string{"webhooks", "recover", "whk_1", "--since", "-10m"}, "--since -10m0s: a duration cannot be negative"},
		{[]string{"webhooks", "logs", "whk_1", "--since", "-10m"}, "--since -10m0s: a duration cannot be negative"},
		{[]string{"events", "tail", "--since", "-5m", "--nats-url", "nats://127.0.0.1:1"}, "--since -5m0s: a duration cannot be negative"},
	} {
		before := len(f.requests)
		r := runOn(t, base, c.args...)
		if r.code != ExitError || !strings.Contains(r.stderr, "error: "+c.want) || len(f.requests) != before {
			t.Fatalf("%v: exit %d, stderr %q, %d requests sent", c.args, r.code, r.stderr, len(f.requests)-before)
		}
	}
}
