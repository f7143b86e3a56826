package stack

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
)

// probeHeader marks a request so the test can count the copies the
// gateway sends of it (the gateway relays every header of the request).
const probeHeader = "X-Test-Probe"

// copyCounter sees every request the gateway sends any service.
type copyCounter struct {
	nc     *nats.Conn
	msgs   chan *nats.Msg
	mu     sync.Mutex
	counts map[string]int
}

func countCopies(t *testing.T, s *Stack) *copyCounter {
	t.Helper()
	nc := testenv.ConnAt(t, s.NATSURL)
	c := &copyCounter{nc: nc, msgs: make(chan *nats.Msg, 1<<16), counts: map[string]int{}}
	if _, err := nc.ChanSubscribe("svc.*.http", c.msgs); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return c
}

// of is how many copies of the request marked probe the gateway has sent
// so far: a round trip on the counter's connection sees every copy the
// server had taken before it delivered.
func (c *copyCounter) of(t *testing.T, probe string) int {
	t.Helper()
	if err := c.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		select {
		case m := <-c.msgs:
			if p := m.Header.Get(probeHeader); p != "" {
				c.counts[p]++
			}
		default:
			return c.counts[probe]
		}
	}
}

// hedged reports whether the gateway sent the request marked probe more
// than once, waiting a little for a copy it may still be sending.
func hedged(t *testing.T, c *copyCounter, probe string) bool {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if c.of(t, probe) >= 2 {
			return true
		}
	}
	return false
}

// write sends a write through the gateway, with an Idempotency-Key unless
// idem is "", marked with probe.
func write(t *testing.T, s *Stack, method, path, idem, probe, body string) response {
	t.Helper()
	headers := []string{probeHeader, probe}
	if idem != "" {
		headers = append(headers, "Idempotency-Key", idem)
	}
	return call(t, s, method, path, adminKey, body, headers...)
}

// wantKeyReused asserts that a request sent under a key another request
// first went with was refused, not answered with that request's result.
func wantKeyReused(t *testing.T, r response) {
	t.Helper()
	wantInvalid(t, r, `["header","Idempotency-Key"]`, "idempotency_key_reused")
}

// sameAnswer asserts that a replay was answered as its first attempt.
func sameAnswer(t *testing.T, what string, first, again response) {
	t.Helper()
	if again.Code != first.Code || string(again.Body) != string(first.Body) {
		t.Fatalf("%s replayed: %d %s\nwant the first answer: %d %s", what, again.Code, again.Body, first.Code, first.Body)
	}
}

// startHedging runs a stack whose gateway forwards over NATS (as a split
// deployment's) and sends a second and third copy of every request it
// may repeat as soon as it has sent the first: each such request's first
// attempt is held past the hedge delay, its copies racing it in the
// services.
func startHedging(t *testing.T) (*Stack, *copyCounter) {
	s := startAdmin(t, localHooks, func(c *Config) { c.HedgeAfter, c.OverNATS = time.Nanosecond, true })
	return s, countCopies(t, s)
}

func manualTicket(t *testing.T, s *Stack, agent, title string) ticket {
	t.Helper()
	return createTicket(t, s, agent, `{"title":"`+title+`","qa_comment":"Seen in QA."}`)
}

func ticketNow(t *testing.T, s *Stack, id string) ticket {
	t.Helper()
	return decodeTicket(t, call(t, s, "GET", "/v1/convai/triage-tickets/"+id, adminKey, ""))
}

// A keyed comment is hedged by the gateway and stored once; a client's
// retry with the same key (its first answer lost) answers the first
// comment's ticket, and the key sent with another body is refused (422
// idempotency_key_reused), storing nothing. Without a key the gateway
// sends a write once, and two requests are two comments.
func TestIdempotentComments(t *testing.T) {
	t.Parallel()
	s, copies := startHedging(t)
	agent := newAgent(t, s, adminKey, "Support")
	// The gateway hedges a request whose answer has not come when it
	// looks (after 1 ns here); on a starved machine the answer can be in
	// by then, and that request goes once. Each try is a ticket of its
	// own, so the one hedged is the one checked.
	var tk ticket
	var first response
	var path, key string
	for try := 1; ; try++ {
		tk = manualTicket(t, s, agent, "Wrong price")
		path, key = "/v1/convai/triage-tickets/"+tk.AgentqaTicketID, fmt.Sprintf("comment-%d", try)
		probe := fmt.Sprintf("keyed-%d", try)
		first = write(t, s, "POST", path+"/comments", key, probe, `{"comment":"first"}`)
		if first.Code != 200 || len(decodeTicket(t, first).TicketComments) != 1 {
			t.Fatalf("comment: %d %s", first.Code, first.Body)
		}
		if hedged(t, copies, probe) {
			break
		}
		if try == 20 {
			t.Fatal("the gateway hedged none of 20 keyed comments")
		}
	}
	sameAnswer(t, "a keyed comment", first, write(t, s, "POST", path+"/comments", key, "retry", `{"comment":"first"}`))
	wantKeyReused(t, write(t, s, "POST", path+"/comments", key, "retry-other", `{"comment":"second"}`))
	if got := ticketNow(t, s, tk.AgentqaTicketID).TicketComments; len(got) != 1 || got[0].Comment != "first" {
		t.Fatalf("comments %+v, want the first alone", got)
	}

	for _, probe := range []string{"plain-1", "plain-2"} {
		if r := write(t, s, "POST", path+"/comments", "", probe, `{"comment":"again"}`); r.Code != 200 {
			t.Fatalf("comment without a key: %d %s", r.Code, r.Body)
		}
		if n := copies.of(t, probe); n != 1 {
			t.Fatalf("the gateway sent a write without a key %d times", n)
		}
	}
	if got := ticketNow(t, s, tk.AgentqaTicketID).TicketComments; len(got) != 3 {
		t.Fatalf("%d comments, want 3: two requests without a key are two comments", len(got))
	}

	turn := write(t, s, "POST", path+"/turn-comments", "turn-1", "turn", `{"turn_index":2,"comment":"here"}`)
	if turn.Code != 200 {
		t.Fatalf("turn comment: %d %s", turn.Code, turn.Body)
	}
	sameAnswer(t, "a keyed turn comment", turn, write(t, s, "POST", path+"/turn-comments", "turn-1", "turn-retry", `{"turn_index":2,"comment":"here"}`))
	wantKeyReused(t, write(t, s, "POST", path+"/turn-comments", "turn-1", "turn-other", `{"turn_index":5,"comment":"there"}`))
	if got := ticketNow(t, s, tk.AgentqaTicketID).TurnComments; len(got) != 1 || got[0].TurnIndex != 2 {
		t.Fatalf("turn comments %+v, want the first alone", got)
	}
}

// A keyed ticket update replayed answers the first result, even after
// other changes made the replay's status change illegal, and the key sent
// with another body, or to another ticket, is refused and changes
// nothing; a keyed merge replayed answers the merged target, not a 409
// for sources merged by then, and merges nothing again.
func TestIdempotentTicketUpdatesAndMerges(t *testing.T) {
	t.Parallel()
	s, _ := startHedging(t)
	agent := newAgent(t, s, adminKey, "Support")
	tk := manualTicket(t, s, agent, "Wrong price")
	path := "/v1/convai/triage-tickets/" + tk.AgentqaTicketID

	first := write(t, s, "PATCH", path, "update-1", "update", `{"title":"Quoted the wrong price"}`)
	if first.Code != 200 || decodeTicket(t, first).Title != "Quoted the wrong price" {
		t.Fatalf("update: %d %s", first.Code, first.Body)
	}
	sameAnswer(t, "a keyed update", first, write(t, s, "PATCH", path, "update-1", "update-retry", `{"title":"Quoted the wrong price"}`))
	wantKeyReused(t, write(t, s, "PATCH", path, "update-1", "update-other", `{"title":"Something else"}`))
	if got := ticketNow(t, s, tk.AgentqaTicketID).Title; got != "Quoted the wrong price" {
		t.Fatalf("title %q: the other body was applied", got)
	}
	// The key sent to another ticket: before, the first ticket was
	// answered for it, and the second left as it was.
	another := manualTicket(t, s, agent, "Another")
	wantKeyReused(t, write(t, s, "PATCH", "/v1/convai/triage-tickets/"+another.AgentqaTicketID, "update-1", "update-another", `{"title":"Quoted the wrong price"}`))
	if got := ticketNow(t, s, another.AgentqaTicketID).Title; got != "Another" {
		t.Fatalf("title %q: the key's reuse on another ticket was applied", got)
	}

	resolved := write(t, s, "PATCH", path, "resolve-1", "resolve", `{"status":"resolved"}`)
	if resolved.Code != 200 {
		t.Fatalf("resolve: %d %s", resolved.Code, resolved.Body)
	}
	if r := call(t, s, "PATCH", path, adminKey, `{"title":"Reopened title","status":"open"}`); r.Code != 200 {
		t.Fatalf("reopen: %d %s", r.Code, r.Body)
	}
	// resolved → resolved is no transition now; the replay answers what
	// the first attempt did.
	sameAnswer(t, "a keyed status change after other changes", resolved, write(t, s, "PATCH", path, "resolve-1", "resolve-retry", `{"status":"resolved"}`))
	if got := ticketNow(t, s, tk.AgentqaTicketID); got.Status != "open" || len(got.StatusChanges) != 3 {
		t.Fatalf("status %s after %d changes, want open after 3", got.Status, len(got.StatusChanges))
	}

	a, b := manualTicket(t, s, agent, "Dup one"), manualTicket(t, s, agent, "Dup two")
	body := `{"source_ticket_ids":["` + a.AgentqaTicketID + `","` + b.AgentqaTicketID + `"]}`
	merged := write(t, s, "POST", path+"/merge", "merge-1", "merge", body)
	if merged.Code != 200 {
		t.Fatalf("merge: %d %s", merged.Code, merged.Body)
	}
	sameAnswer(t, "a keyed merge", merged, write(t, s, "POST", path+"/merge", "merge-1", "merge-retry", body))
	c := manualTicket(t, s, agent, "Not in the first merge")
	wantKeyReused(t, write(t, s, "POST", path+"/merge", "merge-1", "merge-other", `{"source_ticket_ids":["`+c.AgentqaTicketID+`"]}`))
	for _, src := range []ticket{a, b} {
		if got := ticketNow(t, s, src.AgentqaTicketID); got.Status != "merged" || got.MergedIntoTicketID == nil || *got.MergedIntoTicketID != tk.AgentqaTicketID || len(got.StatusChanges) != 2 {
			t.Fatalf("source %s: %s into %v after %d changes", src.AgentqaTicketID, got.Status, got.MergedIntoTicketID, len(got.StatusChanges))
		}
	}
	if got := ticketNow(t, s, c.AgentqaTicketID); got.Status != "open" {
		t.Fatalf("a ticket only the replay named was merged: %s", got.Status)
	}

	del := write(t, s, "DELETE", path, "delete-1", "delete", "")
	if del.Code != 204 {
		t.Fatalf("delete: %d %s", del.Code, del.Body)
	}
	sameAnswer(t, "a keyed deletion", del, write(t, s, "DELETE", path, "delete-1", "delete-retry", ""))
}

// Agent, webhook and API key updates replayed with the same key answer
// the first result, and are refused under it with another body;
// deletions and revocations replayed answer as the first did, not 404; a
// member added with a key is answered again, not 409.
func TestIdempotentUpdatesAcrossServices(t *testing.T) {
	t.Parallel()
	s, _ := startHedging(t)
	agent := newAgent(t, s, adminKey, "Support")
	first := write(t, s, "PATCH", "/v1/convai/agents/"+agent, "agent-1", "agent", `{"name":"Billing"}`)
	if first.Code != 200 || first.JSON(t)["name"] != "Billing" {
		t.Fatalf("agent update: %d %s", first.Code, first.Body)
	}
	sameAnswer(t, "a keyed agent update", first, write(t, s, "PATCH", "/v1/convai/agents/"+agent, "agent-1", "agent-retry", `{"name":"Billing"}`))
	wantKeyReused(t, write(t, s, "PATCH", "/v1/convai/agents/"+agent, "agent-1", "agent-other", `{"name":"Sales"}`))
	if r := call(t, s, "GET", "/v1/convai/agents/"+agent, adminKey, ""); r.JSON(t)["name"] != "Billing" {
		t.Fatalf("agent: %s", r.Body)
	}
	gone := write(t, s, "DELETE", "/v1/convai/agents/"+agent, "agent-del", "agent-del", "")
	if gone.Code != 204 {
		t.Fatalf("agent delete: %d %s", gone.Code, gone.Body)
	}
	sameAnswer(t, "a keyed agent deletion", gone, write(t, s, "DELETE", "/v1/convai/agents/"+agent, "agent-del", "agent-del-retry", ""))

	hook := "/v1/convai/webhooks/" + createWebhook(t, s, `{"url":"http://127.0.0.1:9/hook","events":["call_started"]}`)
	first = write(t, s, "PUT", hook, "hook-1", "hook", `{"url":"http://127.0.0.1:9/first","events":["call_started"]}`)
	if first.Code != 200 {
		t.Fatalf("webhook update: %d %s", first.Code, first.Body)
	}
	sameAnswer(t, "a keyed webhook update", first, write(t, s, "PUT", hook, "hook-1", "hook-retry", `{"url":"http://127.0.0.1:9/first","events":["call_started"]}`))
	wantKeyReused(t, write(t, s, "PUT", hook, "hook-1", "hook-other", `{"url":"http://127.0.0.1:9/second","events":["call_started"]}`))
	if r := call(t, s, "GET", hook, adminKey, ""); !strings.HasSuffix(r.JSON(t)["url"].(string), "/first") {
		t.Fatalf("webhook: %s", r.Body)
	}
	gone = write(t, s, "DELETE", hook, "hook-del", "hook-del", "")
	if gone.Code != 204 {
		t.Fatalf("webhook delete: %d %s", gone.Code, gone.Body)
	}
	sameAnswer(t, "a keyed webhook deletion", gone, write(t, s, "DELETE", hook, "hook-del", "hook-del-retry", ""))

	_, account, keyID := newKey(t, s, adminKey, `["convai_read"]`, "")
	key := "/v1/service-accounts/" + account + "/api-keys/" + keyID
	first = write(t, s, "PATCH", key, "key-1", "key", `{"name":"first"}`)
	if first.Code != 200 || first.JSON(t)["name"] != "first" {
		t.Fatalf("key update: %d %s", first.Code, first.Body)
	}
	sameAnswer(t, "a keyed API key update", first, write(t, s, "PATCH", key, "key-1", "key-retry", `{"name":"first"}`))
	wantKeyReused(t, write(t, s, "PATCH", key, "key-1", "key-other", `{"name":"second","is_disabled":true}`))
	revoked := write(t, s, "DELETE", key, "key-del", "key-del", "")
	if revoked.Code != 200 {
		t.Fatalf("revoke: %d %s", revoked.Code, revoked.Body)
	}
	sameAnswer(t, "a keyed revocation", revoked, write(t, s, "DELETE", key, "key-del", "key-del-retry", ""))

	member := write(t, s, "POST", "/v1/workspace/invites/add", "member-1", "member", `{"email":"ada@example.com","first_name":"Ada"}`)
	if member.Code != 200 {
		t.Fatalf("add member: %d %s", member.Code, member.Body)
	}
	sameAnswer(t, "a keyed member addition", member, write(t, s, "POST", "/v1/workspace/invites/add", "member-1", "member-retry", `{"email":"ada@example.com","first_name":"Ada"}`))
	wantError(t, call(t, s, "POST", "/v1/workspace/invites/add", adminKey, `{"email":"ada@example.com"}`), 409, "member_exists")
	locked := write(t, s, "POST", "/v1/workspace/members", "member-lock", "member-lock", `{"email":"ada@example.com","is_locked":true}`)
	sameAnswer(t, "a keyed member update", locked, write(t, s, "POST", "/v1/workspace/members", "member-lock", "member-lock-retry", `{"email":"ada@example.com","is_locked":true}`))
}

// A keyed forced folder deletion deletes every test under it (each
// deletion carries its own command id: the stream would take the second
// for a duplicate of the first), and answers 204 again when replayed; a
// keyed bulk move replayed moves nothing again, and its key sent to move
// to another folder is refused and moves nothing.
func TestIdempotentFolderDeletionAndMoves(t *testing.T) {
	t.Parallel()
	s, _ := startHedging(t)
	folder := func(name string) string {
		return postForID(t, s, adminKey, "/v1/convai/agent-testing/folders", `{"name":"`+name+`"}`, 200, "id")
	}
	billing, payments := folder("Billing"), folder("Payments")
	var tests []string
	for _, name := range []string{"One", "Two", "Three"} {
		tests = append(tests, createTest(t, s, `{"type":"llm","name":"`+name+`","success_condition":"x"}`))
	}
	ids, _ := json.Marshal(tests)
	moved := write(t, s, "POST", "/v1/convai/agent-testing/bulk-move", "move-1", "move", `{"entity_ids":`+string(ids)+`,"move_to":"`+billing+`"}`)
	if moved.Code != 200 {
		t.Fatalf("move: %d %s", moved.Code, moved.Body)
	}
	sameAnswer(t, "a keyed bulk move", moved, write(t, s, "POST", "/v1/convai/agent-testing/bulk-move", "move-1", "move-retry", `{"entity_ids":`+string(ids)+`,"move_to":"`+billing+`"}`))
	wantKeyReused(t, write(t, s, "POST", "/v1/convai/agent-testing/bulk-move", "move-1", "move-other", `{"entity_ids":`+string(ids)+`,"move_to":"`+payments+`"}`))
	for _, id := range tests {
		if r := call(t, s, "GET", "/v1/convai/agent-testing/"+id, adminKey, ""); r.JSON(t)["parent_folder_id"] != billing {
			t.Fatalf("test %s: %s", id, r.Body)
		}
	}

	gone := write(t, s, "DELETE", "/v1/convai/agent-testing/folders/"+billing+"?force=true", "folder-del", "folder-del", "")
	if gone.Code != 204 {
		t.Fatalf("force delete: %d %s", gone.Code, gone.Body)
	}
	for _, id := range tests {
		wantError(t, call(t, s, "GET", "/v1/convai/agent-testing/"+id, adminKey, ""), 404, "test_not_found")
	}
	sameAnswer(t, "a keyed folder deletion", gone, write(t, s, "DELETE", "/v1/convai/agent-testing/folders/"+billing+"?force=true", "folder-del", "folder-del-retry", ""))
}

// A keyed create retried after what its first attempt checked is gone
// answers what that attempt made, as it would now fail: a manual ticket
// whose agent was deleted since, an invocation whose test was, a test
// and a folder whose parent folder was (deleted with it). Before, each replay answered the
// check's error (404 agent_not_found, 422 test not found) though the
// first attempt had succeeded.
func TestKeyedCreatesReplayedAfterWhatTheyCheckedIsGone(t *testing.T) {
	t.Parallel()
	s := startAdmin(t)
	replayed := func(what string, first, again response) {
		t.Helper()
		if first.Code/100 != 2 || again.Code != first.Code || again.JSON(t)["id"] != first.JSON(t)["id"] {
			t.Fatalf("%s replayed: %d %s\nwant the first attempt's: %d %s", what, again.Code, again.Body, first.Code, first.Body)
		}
	}

	agent := newAgent(t, s, adminKey, "Gone soon")
	report := `{"title":"Wrong hours","qa_comment":"Seen in QA."}`
	ticket := write(t, s, "POST", "/v1/convai/agents/"+agent+"/triage-tickets", "ticket-1", "ticket", report)
	if r := call(t, s, "DELETE", "/v1/convai/agents/"+agent, adminKey, ""); r.Code != 204 {
		t.Fatalf("delete agent: %d %s", r.Code, r.Body)
	}
	replayed("a keyed manual ticket, its agent deleted", ticket, write(t, s, "POST", "/v1/convai/agents/"+agent+"/triage-tickets", "ticket-1", "ticket-retry", report))

	runner := agentWith(t, s)
	test := createTest(t, s, hoursTest)
	run := `{"tests":[{"test_id":"` + test + `"}]}`
	inv := write(t, s, "POST", "/v1/convai/agents/"+runner+"/run-tests", "run-1", "run", run)
	if r := call(t, s, "DELETE", "/v1/convai/agent-testing/"+test, adminKey, ""); r.Code/100 != 2 {
		t.Fatalf("delete test: %d %s", r.Code, r.Body)
	}
	replayed("a keyed invocation, its test deleted", inv, write(t, s, "POST", "/v1/convai/agents/"+runner+"/run-tests", "run-1", "run-retry", run))

	parent := call(t, s, "POST", "/v1/convai/agent-testing/folders", adminKey, `{"name":"Billing"}`).JSON(t)["id"].(string)
	folder := `{"name":"Refunds","parent_folder_id":"` + parent + `"}`
	child := write(t, s, "POST", "/v1/convai/agent-testing/folders", "folder-1", "folder", folder)
	inFolder := strings.Replace(hoursTest, `"type":"llm",`, `"type":"llm","parent_folder_id":"`+parent+`",`, 1)
	created := write(t, s, "POST", "/v1/convai/agent-testing/create", "test-1", "test", inFolder)
	if r := call(t, s, "DELETE", "/v1/convai/agent-testing/folders/"+parent+"?force=true", adminKey, ""); r.Code/100 != 2 {
		t.Fatalf("delete folder: %d %s", r.Code, r.Body)
	}
	// Both went with their parent (a forced deletion): their replays
	// answer them as their first attempts left them.
	replayed("a keyed folder, deleted with its parent", child, write(t, s, "POST", "/v1/convai/agent-testing/folders", "folder-1", "folder-retry", folder))
	replayed("a keyed test, deleted with its folder", created, write(t, s, "POST", "/v1/convai/agent-testing/create", "test-1", "test-retry", inFolder))
}

// An Idempotency-Key goes with one request: its creates, sent again as
// they were, answer the first result; sent with another body they are
// refused (422 idempotency_key_reused at the header) rather than
// answered with what the first request made, in every service: a ticket
// (looked up by the key before anything is checked), a test, a folder, a
// webhook (the store's duplicate answer), a service account (identity's
// own log). An ingested event is the request's own: the key sent with
// another event stores that one under an id of its own.
func TestAKeyGoesWithOneRequest(t *testing.T) {
	t.Parallel()
	s := startAdmin(t, localHooks)
	agent := newAgent(t, s, adminKey, "Support")
	for _, c := range []struct {
		what, path, body, other string
	}{
		{"ticket", "/v1/convai/agents/" + agent + "/triage-tickets", `{"title":"Wrong price","qa_comment":"a"}`, `{"title":"Wrong hours","qa_comment":"b"}`},
		{"test", "/v1/convai/agent-testing/create", `{"type":"llm","name":"One","success_condition":"x"}`, `{"type":"llm","name":"Two","success_condition":"x"}`},
		{"folder", "/v1/convai/agent-testing/folders", `{"name":"Billing"}`, `{"name":"Payments"}`},
		{"webhook", "/v1/convai/webhooks", `{"url":"http://127.0.0.1:9/a","events":["call_started"]}`, `{"url":"http://127.0.0.1:9/b","events":["call_started"]}`},
		{"service account", "/v1/service-accounts", `{"name":"svc-a"}`, `{"name":"svc-b"}`},
	} {
		key := "create-" + strings.ReplaceAll(c.what, " ", "-")
		first := call(t, s, "POST", c.path, adminKey, c.body, "Idempotency-Key", key)
		if first.Code/100 != 2 {
			t.Fatalf("%s: %d %s", c.what, first.Code, first.Body)
		}
		sameAnswer(t, "a keyed "+c.what+" create", first, call(t, s, "POST", c.path, adminKey, c.body, "Idempotency-Key", key))
		wantKeyReused(t, call(t, s, "POST", c.path, adminKey, c.other, "Idempotency-Key", key))
	}

	event := func(callID string) string {
		return `{"event":"call_started","timestamp":"2026-01-01T00:00:00Z","data":{"call_id":"` + callID + `"}}`
	}
	ingested := func(body string) string {
		t.Helper()
		r := call(t, s, "POST", "/v1/convai/events", adminKey, body, "Idempotency-Key", "ingest-1")
		if r.Code != 202 {
			t.Fatalf("ingest: %d %s", r.Code, r.Body)
		}
		return r.JSON(t)["event_id"].(string)
	}
	// An ingested event, like every keyed write: the retry answers the
	// first's id; another event under the key is refused.
	first, again := ingested(event("call_a")), ingested(event("call_a"))
	if again != first {
		t.Fatalf("ingested ids: first %s, its retry %s: want the retry's the first's", first, again)
	}
	wantKeyReused(t, call(t, s, "POST", "/v1/convai/events", adminKey, event("call_b"), "Idempotency-Key", "ingest-1"))
}
