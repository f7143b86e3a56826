package stack

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/api"
)

// hostileIDs are path segments no id can be: too long, empty-ish,
// non-ASCII, control characters, NATS wildcards and separators (each
// escaped, so it reaches the router as the caller sent it).
var hostileIDs = []string{
	strings.Repeat("a", 5000), strings.Repeat("b", 129), "%20", "caf%C3%A9", "%E2%80%AE", "%00", "a%0D%0APUB%20x%201",
	"%2A", "%3E", "a.b", "%09", "a%7Fb", "%F0%9F%92%A5",
}

// startHostile is a stack whose admin key can send thousands of requests.
func startHostile(t *testing.T) *Stack {
	return startAdmin(t, func(c *Config) { c.RateLimitPerMinute = 1_000_000 })
}

// stillServes fails unless the stack answers an ordinary request correctly
// and reports itself ready: the check after every batch of hostile input.
func stillServes(t *testing.T, s *Stack, agentID, after string) {
	t.Helper()
	if r := call(t, s, "GET", "/v1/convai/agents/"+agentID, adminKey, ""); r.Code != 200 || r.JSON(t)["agent_id"] != agentID {
		t.Fatalf("after %s, an ordinary GET answered %d %s", after, r.Code, r.Body)
	}
	if r := call(t, s, "GET", "/readyz", "", ""); r.Code != 200 {
		t.Fatalf("after %s, /readyz answered %d %s", after, r.Code, r.Body)
	}
}

var pathVar = regexp.MustCompile(`\{([a-z_]+)\}`)

// Every route of the API, with every path variable replaced in turn by
// every hostile id (the others well formed), answers the id's 404 in the
// spec's shape, and the platform keeps serving.
func TestHostilePathIDs(t *testing.T) {
	t.Parallel()
	s := startHostile(t)
	agentID := newAgent(t, s, adminKey, "Target")
	for _, op := range api.Operations {
		vars := op.Vars()
		for i, name := range vars {
			for _, bad := range hostileIDs {
				n := 0
				path := pathVar.ReplaceAllStringFunc(op.Path, func(string) string {
					n++
					if n-1 == i {
						return bad
					}
					return "id_well_formed"
				})
				body := ""
				if !op.Reads() {
					body = "{}"
				}
				r := call(t, s, op.Method, path, adminKey, body)
				if r.Code >= 500 || r.Code < 400 {
					t.Fatalf("%s %s with %s=%.30q… answered %d %.300s", op.Method, op.Path, name, bad, r.Code, r.Body)
				}
				wantError(t, r, 404, api.IDParams[name].NotFound.Status)
				if strings.Contains(string(r.Body), "aaaaaaaaaa") {
					t.Fatalf("the answer repeats the caller's id: %.300s", r.Body)
				}
			}
		}
		stillServes(t, s, agentID, op.Name)
	}
}

// The outage that was seen: one GET with a 5,000-character id took the
// platform down until a restart. Now it is a 404 and nothing else changes.
func TestOverlongIDIsA404AndTheStackServesOn(t *testing.T) {
	t.Parallel()
	s := startHostile(t)
	agentID := newAgent(t, s, adminKey, "Target")
	long := strings.Repeat("x", 5000)
	for _, path := range []string{
		"/v1/convai/agents/" + long, "/v1/convai/triage-tickets/" + long, "/v1/convai/agent-testing/" + long,
		"/v1/convai/agent-testing/folders/" + long, "/v1/convai/test-invocations/" + long,
		"/v1/service-accounts/" + long + "/api-keys",
	} {
		if r := call(t, s, "GET", path, adminKey, ""); r.Code != 404 {
			t.Fatalf("GET %.60s…: %d %s", path, r.Code, r.Body)
		}
		stillServes(t, s, agentID, "GET "+path[:40])
	}
	wantError(t, call(t, s, "POST", "/v1/convai/agents/"+long+"/run-tests", adminKey, `{"tests":[{"test_id":"t"}]}`), 404, "agent_not_found")
	stillServes(t, s, agentID, "run-tests")
}

// Ids inside bodies meet the same grammar: 422 with the field's loc.
func TestHostileBodyIDs(t *testing.T) {
	t.Parallel()
	s := startHostile(t)
	agentID := newAgent(t, s, adminKey, "Target")
	ticket := call(t, s, "POST", "/v1/convai/agents/"+agentID+"/triage-tickets", adminKey, `{"title":"t","qa_comment":"c"}`)
	if ticket.Code != 201 && ticket.Code != 200 {
		t.Fatalf("ticket: %d %s", ticket.Code, ticket.Body)
	}
	ticketID := ticket.JSON(t)["agentqa_ticket_id"].(string)
	for _, bad := range []string{strings.Repeat("z", 5000), "a.b", "*", ">", "a b", "é", "a\\u0000", "a\\r\\nPUB x 1"} {
		cases := []struct {
			method, path, body string
			loc                string
		}{
			{"POST", "/v1/convai/triage-tickets/" + ticketID + "/merge", `{"source_ticket_ids":["%s"]}`, `["body","source_ticket_ids",0]`},
			{"POST", "/v1/convai/triage-tickets", `{"conversation_id":"%s","qa_comment":"c","agent_id":"` + agentID + `"}`, `["body","conversation_id"]`},
			{"POST", "/v1/convai/triage-tickets", `{"conversation_id":"conv_1","qa_comment":"c","agent_id":"%s"}`, `["body","agent_id"]`},
			{"POST", "/v1/convai/agent-testing/create", `{"type":"llm","name":"n","success_condition":"s","parent_folder_id":"%s"}`, `["body","parent_folder_id"]`},
			{"POST", "/v1/convai/agent-testing/folders", `{"name":"f","parent_folder_id":"%s"}`, `["body","parent_folder_id"]`},
			{"POST", "/v1/convai/agent-testing/summaries", `{"test_ids":["%s"]}`, `["body","test_ids",0]`},
			{"POST", "/v1/convai/agent-testing/bulk-move", `{"entity_ids":["%s"]}`, `["body","entity_ids",0]`},
			{"POST", "/v1/convai/agent-testing/bulk-move", `{"entity_ids":["test_1"],"move_to":"%s"}`, `["body","move_to"]`},
			{"POST", "/v1/convai/agents/" + agentID + "/run-tests", `{"tests":[{"test_id":"%s"}]}`, `["body","tests",0,"test_id"]`},
			{"POST", "/v1/convai/agents/" + agentID + "/run-tests", `{"tests":[{"test_id":"t1"}],"branch_id":"%s"}`, `["body","branch_id"]`},
			{"POST", "/v1/convai/test-invocations/tinv_1/resubmit", `{"test_run_ids":["%s"],"agent_id":"` + agentID + `"}`, `["body","test_run_ids",0]`},
			{"POST", "/v1/convai/events", `{"event":"conversation_started","data":{"conversation_id":"%s"}}`, `["body","data","conversation_id"]`},
		}
		for _, c := range cases {
			r := call(t, s, c.method, c.path, adminKey, fmt.Sprintf(c.body, bad))
			if r.Code != 422 || !strings.Contains(string(r.Body), c.loc) {
				t.Fatalf("%s %s with %.20q: %d %.300s, want 422 at %s", c.method, c.path, bad, r.Code, r.Body, c.loc)
			}
		}
		for _, q := range []string{"/v1/convai/triage-tickets?agent_id=", "/v1/convai/test-invocations?agent_id=", "/v1/convai/agent-testing?parent_folder_id="} {
			r := call(t, s, "GET", q+url.QueryEscape(strings.ReplaceAll(bad, "\\u0000", "\x00")), adminKey, "")
			if r.Code != 422 || !strings.Contains(string(r.Body), `["query",`) {
				t.Fatalf("GET %s%.20q: %d %.300s", q, bad, r.Code, r.Body)
			}
		}
		stillServes(t, s, agentID, "body ids "+bad[:1])
	}
}

// Malformed, non-object and oversized bodies on every write operation
// are 4xx in the spec's shape; nothing is written by them.
func TestHostileBodies(t *testing.T) {
	t.Parallel()
	s := startHostile(t)
	agentID := newAgent(t, s, adminKey, "Target")
	huge := `{"name":"` + strings.Repeat("n", 900_000) + `","title":"` + strings.Repeat("t", 100_000) + `"}`
	for _, op := range api.Operations {
		if op.Reads() || op.Method == "DELETE" {
			continue
		}
		path := pathVar.ReplaceAllString(op.Path, agentID)
		for _, body := range []string{`{`, `null`, `[]`, `"x"`, `{"name":`, "\x00\xff", huge, `{"name":"` + strings.Repeat("n", 2<<20) + `"}`} {
			r := call(t, s, op.Method, path, adminKey, body)
			if r.Code < 400 || r.Code >= 500 {
				t.Fatalf("%s %s with a %d-byte body %.12q: %d %.300s", op.Method, op.Path, len(body), body, r.Code, r.Body)
			}
		}
		stillServes(t, s, agentID, op.Name)
	}
	if r := call(t, s, "GET", "/v1/convai/agents", adminKey, ""); len(r.JSON(t)["agents"].([]any)) != 1 {
		t.Fatalf("hostile bodies created agents: %s", r.Body)
	}
}

// The smaller findings: each is a clean 4xx now, and HEAD works.
func TestHostileValuesAndHEAD(t *testing.T) {
	t.Parallel()
	s := startHostile(t)
	agentID := newAgent(t, s, adminKey, "Target")
	wantValidation := func(r response, loc string) {
		t.Helper()
		if r.Code != 422 || !strings.Contains(string(r.Body), loc) {
			t.Fatalf("got %d %.300s, want 422 at %s", r.Code, r.Body, loc)
		}
	}
	r := call(t, s, "POST", "/v1/service-accounts", adminKey, `{"name":"svc"}`)
	account := r.JSON(t)["service-account-user-id"].(string)
	keys := "/v1/service-accounts/" + account + "/api-keys"
	wantValidation(call(t, s, "POST", keys, adminKey, `{"name":"k","permissions":["convai_read"],"expires_at_unix":9223372036854775807}`), `"expires_at_unix"`)
	wantValidation(call(t, s, "POST", keys, adminKey, `{"name":"`+strings.Repeat("k", 300_000)+`","permissions":["convai_read"]}`), `"name"`)
	wantValidation(call(t, s, "POST", "/v1/workspace/invites/add", adminKey, `{"email":"`+strings.Repeat("m", 300_000)+`@example.com"}`), `"email"`)
	wantValidation(call(t, s, "POST", "/v1/workspace/members", adminKey, `{"email":"`+strings.Repeat("m", 300_000)+`@example.com"}`), `"email"`)
	wantValidation(call(t, s, "POST", "/v1/convai/agents/create", adminKey, `null`), `["body"]`)
	long := strings.Repeat("s", 300_000)
	wantValidation(call(t, s, "POST", "/v1/convai/agent-testing/create", adminKey, `{"type":"llm","name":"n","success_condition":"`+long+`"}`), `["body","success_condition"]`)
	wantValidation(call(t, s, "POST", "/v1/convai/agent-testing/create", adminKey,
		`{"type":"llm","name":"n","success_condition":"c","chat_history":[{"role":"user","message":"`+long+`","time_in_call_secs":1}]}`), `["body","chat_history",0,"message"]`)
	wantValidation(call(t, s, "PATCH", "/v1/convai/agents/"+agentID, adminKey, `{"conversation_config":{"agent":{"first_message":"`+strings.Repeat("f", 200_001)+`"}}}`),
		`["body","conversation_config","agent","first_message"]`)
	wantValidation(call(t, s, "POST", "/v1/convai/agents/create", adminKey, `{"name":"a"}`, "Idempotency-Key", strings.Repeat("k", 5000)), `["header","Idempotency-Key"]`)
	wantValidation(call(t, s, "POST", "/v1/convai/agents/create", adminKey, `{"name":"a"}`, "Idempotency-Key", ""), `["header","Idempotency-Key"]`)
	// A known path with a method it does not take: 405, naming the ones it
	// does (RFC 9110), at the gateway and at the console's routes.
	wrong := call(t, s, "DELETE", "/v1/convai/agents", adminKey, "")
	wantError(t, wrong, 405, "method_not_allowed")
	if got := wrong.Header.Get("Allow"); got != "GET, HEAD" {
		t.Errorf("405 on /v1/convai/agents: Allow %q, want GET, HEAD", got)
	}
	if got := call(t, s, "PUT", "/v1/convai/agents/"+agentID, adminKey, "{}").Header.Get("Allow"); got != "GET, HEAD, PATCH, DELETE" {
		t.Errorf("405 on an agent: Allow %q", got)
	}

	for _, op := range api.Operations {
		if !op.Reads() {
			continue
		}
		path := pathVar.ReplaceAllString(op.Path, agentID)
		get, head := call(t, s, "GET", path, adminKey, ""), call(t, s, "HEAD", path, adminKey, "")
		if head.Code != get.Code || len(head.Body) != 0 || head.Code == 405 {
			t.Errorf("HEAD %s: %d with %d body bytes; GET answered %d", path, head.Code, len(head.Body), get.Code)
		}
	}
	stillServes(t, s, agentID, "hostile values")
}

// The same Idempotency-Key is per workspace and per operation: two
// workspaces using it each get their own resource, and within one
// workspace a retry answers the first result, while the key sent with
// another body is refused.
func TestIdempotencyKeysArePerWorkspace(t *testing.T) {
	t.Parallel()
	s := startHostile(t)
	other := createWorkspace(t, s, "Other").APIKey
	const key = "K-shared-123"
	a := call(t, s, "POST", "/v1/convai/agents/create", adminKey, `{"name":"A"}`, "Idempotency-Key", key)
	b := call(t, s, "POST", "/v1/convai/agents/create", other, `{"name":"B"}`, "Idempotency-Key", key)
	if a.Code != 201 || b.Code != 201 {
		t.Fatalf("agents: %d %s / %d %s", a.Code, a.Body, b.Code, b.Body)
	}
	idA, idB := a.JSON(t)["agent_id"].(string), b.JSON(t)["agent_id"].(string)
	if idA == idB || b.JSON(t)["name"] != "B" {
		t.Fatalf("workspace B got workspace A's agent: %s / %s", a.Body, b.Body)
	}
	again := call(t, s, "POST", "/v1/convai/agents/create", adminKey, `{"name":"A"}`, "Idempotency-Key", key)
	if again.Code != 201 || again.JSON(t)["agent_id"] != idA || again.JSON(t)["name"] != "A" {
		t.Fatalf("a retry with the same key answers the first result: %d %s", again.Code, again.Body)
	}
	wantInvalid(t, call(t, s, "POST", "/v1/convai/agents/create", adminKey, `{"name":"A changed"}`, "Idempotency-Key", key),
		`["header","Idempotency-Key"]`, "idempotency_key_reused")
	// The same key on another operation is another command.
	for _, c := range []struct{ path, body string }{
		{"/v1/convai/agents/" + idA + "/triage-tickets", `{"title":"t","qa_comment":"c"}`},
		{"/v1/convai/webhooks", `{"name":"w","url":"https://example.com/hook","events":["call_started"]}`},
		{"/v1/convai/agent-testing/create", `{"type":"llm","name":"n","success_condition":"s"}`},
	} {
		ra := call(t, s, "POST", c.path, adminKey, c.body, "Idempotency-Key", key)
		otherPath := strings.Replace(c.path, idA, idB, 1)
		rb := call(t, s, "POST", otherPath, other, c.body, "Idempotency-Key", key)
		if ra.Code >= 300 || rb.Code >= 300 {
			t.Fatalf("%s: workspace A %d %s, workspace B %d %s", c.path, ra.Code, ra.Body, rb.Code, rb.Body)
		}
		if string(ra.Body) == string(rb.Body) || strings.Contains(string(rb.Body), idA) {
			t.Fatalf("%s: workspace B got workspace A's answer: %s", c.path, rb.Body)
		}
	}
}
