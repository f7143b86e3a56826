package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/wire"
)

// ticket is a ticket as the API answers it; a search adds where it
// matched.
type ticket struct {
	wire.Ticket
	SearchMatch *map[string]any `json:"search_match"`
}

type ticketPage struct {
	Tickets    []ticket `json:"agent_conversation_tickets"`
	NextCursor *string  `json:"next_cursor"`
	HasMore    bool     `json:"has_more"`
}

func decodeTicket(t *testing.T, r response) ticket {
	t.Helper()
	var tk ticket
	if err := json.Unmarshal(r.Body, &tk); err != nil || tk.AgentqaTicketID == "" {
		t.Fatalf("ticket body %d %s: %v", r.Code, r.Body, err)
	}
	return tk
}

// createTicket raises a ticket on agent from body, wants 201 and answers
// the ticket.
func createTicket(t *testing.T, s *Stack, agent, body string) ticket {
	t.Helper()
	r := call(t, s, "POST", "/v1/convai/agents/"+agent+"/triage-tickets", adminKey, body)
	if r.Code != 201 {
		t.Fatalf("create ticket: %d %s", r.Code, r.Body)
	}
	return decodeTicket(t, r)
}

// every field of spec 2.1 is present, null or not.
var specTicketFields = []string{"agentqa_ticket_id", "workspace_id", "owner_user_id", "agent_id", "needs_clustering", "issue_type",
	"labels", "conversation_ids", "first_seen_unix_secs", "last_seen_unix_secs", "qa_comment", "ticket_comments", "turn_comments",
	"status", "source", "assignee_user_id", "created_at_unix_secs", "updated_at_unix_secs",
	"title", "priority", "status_changes", "priority_changes", "merged_into_ticket_id"}

func publishConversation(t *testing.T, s *Stack, ws, event, conv, agent string, at time.Time) {
	t.Helper()
	js := testenv.JetStreamAt(t, s.NATSURL)
	body, _ := json.Marshal(map[string]any{"event": event, "timestamp": at.UTC().Format(time.RFC3339),
		"data": map[string]any{"conversation_id": conv, "agent_id": agent}})
	if _, err := js.Publish(context.Background(), "platform.evt."+ws+"."+event, body); err != nil {
		t.Fatal(err)
	}
}

func newAgent(t *testing.T, s *Stack, key, name string) string {
	t.Helper()
	return createAgent(t, s, key, `{"name":"`+name+`"}`)
}

func TestTicketLifecycle(t *testing.T) {
	t.Parallel()
	s := startAdmin(t)
	agent := newAgent(t, s, adminKey, "Support")
	started := time.Now().Add(-time.Hour).Truncate(time.Second)
	publishConversation(t, s, "ws_default", "conversation_started", "conv_1", agent, started)
	publishConversation(t, s, "ws_default", "conversation_ended", "conv_1", agent, started.Add(5*time.Minute))

	// The service learns the conversation from the platform events, in
	// their order: once a conversation published after both is known, so
	// are conv_1's start and end (a report between the two would see the
	// conversation still going on).
	publishConversation(t, s, "ws_default", "conversation_started", "conv_sentinel", agent, started)
	eventually(t, 5*time.Second, "the events up to the sentinel are known", func() bool {
		return call(t, s, "POST", "/v1/convai/triage-tickets", adminKey, `{"conversation_id":"conv_sentinel","qa_comment":"sentinel"}`).Code == 201
	})
	var created ticket
	eventually(t, 5*time.Second, "the conversation is known", func() bool {
		r := call(t, s, "POST", "/v1/convai/triage-tickets", adminKey,
			`{"conversation_id":"conv_1","qa_comment":"The agent quoted the wrong price.\nDetails follow.","turn_comments":[{"turn_index":3,"comment":"here"}],"priority":"medium"}`)
		if r.Code != 201 {
			t.Fatalf("report on a known conversation: %d %s", r.Code, r.Body)
		}
		for _, f := range specTicketFields {
			if _, ok := r.JSON(t)[f]; !ok {
				t.Fatalf("field %s absent: %s", f, r.Body)
			}
		}
		created = decodeTicket(t, r)
		return true
	})
	if created.AgentID != agent || created.Status != "open" || created.Source != "qa" || created.Title != "The agent quoted the wrong price." ||
		created.FirstSeenUnixSecs == nil || *created.FirstSeenUnixSecs != started.Unix() || *created.LastSeenUnixSecs != started.Add(5*time.Minute).Unix() ||
		len(created.TurnComments) != 1 || *created.Priority != "medium" || created.OwnerUserID != "sa_admin" {
		t.Fatalf("created ticket: %+v", created)
	}

	// A second report on the same conversation joins the open ticket.
	r := call(t, s, "POST", "/v1/convai/triage-tickets", adminKey, `{"conversation_id":"conv_1","qa_comment":"Again.","priority":"high"}`)
	joined := decodeTicket(t, r)
	if r.Code != 200 || joined.AgentqaTicketID != created.AgentqaTicketID || len(joined.TicketComments) != 1 || *joined.Priority != "high" {
		t.Fatalf("second report: %d %+v", r.Code, joined)
	}

	// Unknown conversation without agent_id → 404; with agent_id it works.
	wantError(t, call(t, s, "POST", "/v1/convai/triage-tickets", adminKey, `{"conversation_id":"conv_x","qa_comment":"?"}`), 404, "conversation_not_found")
	r = call(t, s, "POST", "/v1/convai/triage-tickets", adminKey, `{"conversation_id":"conv_x","qa_comment":"raised early","agent_id":"`+agent+`","source":"agent","issue_type":"knowledge_gap","labels":["pricing"]}`)
	if r.Code != 201 || decodeTicket(t, r).Source != "agent" {
		t.Fatalf("with agent_id: %d %s", r.Code, r.Body)
	}
	wantError(t, call(t, s, "POST", "/v1/convai/triage-tickets", adminKey, `{"conversation_id":"conv_y","qa_comment":"?","agent_id":"agent_missing"}`), 404, "agent_not_found")

	// Manual tickets on an agent.
	r = call(t, s, "POST", "/v1/convai/agents/"+agent+"/triage-tickets", adminKey, `{"qa_comment":"Follow up on refunds","priority":"low"}`)
	manual := decodeTicket(t, r)
	if r.Code != 201 || manual.Source != "manual" || manual.Title != "Follow up on refunds" || len(manual.ConversationIDs) != 0 {
		t.Fatalf("manual: %d %s", r.Code, r.Body)
	}
	wantError(t, call(t, s, "POST", "/v1/convai/agents/agent_missing/triage-tickets", adminKey, `{"qa_comment":"x"}`), 404, "agent_not_found")

	// Status machine: open → in_progress → resolved → open; merged only by merge.
	path := "/v1/convai/triage-tickets/" + created.AgentqaTicketID
	for _, st := range []string{"in_progress", "resolved", "open"} {
		if r := call(t, s, "PATCH", path, adminKey, `{"status":"`+st+`"}`); r.Code != 200 || decodeTicket(t, r).Status != st {
			t.Fatalf("→ %s: %d %s", st, r.Code, r.Body)
		}
	}
	wantError(t, call(t, s, "PATCH", path, adminKey, `{"status":"merged"}`), 409, "invalid_status_transition")
	call(t, s, "PATCH", path, adminKey, `{"status":"resolved"}`)
	// The spec's four statuses are all there are.
	if r := call(t, s, "PATCH", path, adminKey, `{"status":"cancelled"}`); r.Code != 422 || !strings.Contains(string(r.Body), `"type":"enum"`) {
		t.Fatalf("a status the spec does not name: %d %s", r.Code, r.Body)
	}
	call(t, s, "PATCH", path, adminKey, `{"status":"open"}`)
	r = call(t, s, "GET", path, adminKey, "")
	if got := decodeTicket(t, r); len(got.StatusChanges) != 6 {
		t.Fatalf("status history: %+v", got.StatusChanges)
	}

	// Assignment: a member, then unassigned with null; a stranger → 422.
	if r := call(t, s, "PATCH", path, adminKey, `{"assignee_user_id":"sa_admin","title":"Wrong price","priority":null}`); r.Code != 200 {
		t.Fatalf("assign: %d %s", r.Code, r.Body)
	} else if got := decodeTicket(t, r); *got.AssigneeUserID != "sa_admin" || got.Title != "Wrong price" || got.Priority != nil {
		t.Fatalf("assigned: %+v", got)
	}
	r = call(t, s, "PATCH", path, adminKey, `{"assignee_user_id":"sa_nobody"}`)
	if r.Code != 422 || !strings.Contains(string(r.Body), `"loc":["body","assignee_user_id"]`) {
		t.Fatalf("stranger: %d %s", r.Code, r.Body)
	}
	r = call(t, s, "GET", "/v1/convai/triage-tickets?assignee_user_id=sa_admin", adminKey, "")
	var page ticketPage
	_ = json.Unmarshal(r.Body, &page)
	if len(page.Tickets) != 1 || page.Tickets[0].AgentqaTicketID != created.AgentqaTicketID {
		t.Fatalf("assignee filter: %s", r.Body)
	}
	// "@me" is the caller (the admin key's sa_admin), in PATCH and in the filter.
	call(t, s, "PATCH", path, adminKey, `{"assignee_user_id":null}`)
	if r := call(t, s, "PATCH", path, adminKey, `{"assignee_user_id":"@me"}`); r.Code != 200 || decodeTicket(t, r).AssigneeUserID == nil || *decodeTicket(t, r).AssigneeUserID != "sa_admin" {
		t.Fatalf("assign @me: %d %s", r.Code, r.Body)
	}
	r = call(t, s, "GET", "/v1/convai/triage-tickets?assignee_user_id=@me", adminKey, "")
	page = ticketPage{}
	_ = json.Unmarshal(r.Body, &page)
	if len(page.Tickets) != 1 || page.Tickets[0].AgentqaTicketID != created.AgentqaTicketID {
		t.Fatalf("assignee filter @me: %s", r.Body)
	}
	if r := call(t, s, "PATCH", path, adminKey, `{"assignee_user_id":null}`); decodeTicket(t, r).AssigneeUserID != nil {
		t.Fatalf("unassign: %s", r.Body)
	}

	// Comments.
	if r := call(t, s, "POST", path+"/comments", adminKey, `{"comment":"Looking into it"}`); r.Code != 200 || len(decodeTicket(t, r).TicketComments) != 2 {
		t.Fatalf("comment: %d %s", r.Code, r.Body)
	}
	if r := call(t, s, "POST", path+"/turn-comments", adminKey, `{"turn_index":5,"comment":"Wrong tool call"}`); r.Code != 200 || len(decodeTicket(t, r).TurnComments) != 2 {
		t.Fatalf("turn comment: %d %s", r.Code, r.Body)
	}
	r = call(t, s, "POST", path+"/turn-comments", adminKey, `{"turn_index":-1,"comment":"x"}`)
	if r.Code != 422 || !strings.Contains(string(r.Body), `"loc":["body","turn_index"]`) {
		t.Fatalf("bad turn index: %d %s", r.Code, r.Body)
	}

	// Search sets search_match.
	r = call(t, s, "GET", "/v1/convai/triage-tickets?search="+url.QueryEscape("WRONG TOOL"), adminKey, "")
	_ = json.Unmarshal(r.Body, &page)
	if len(page.Tickets) != 1 || page.Tickets[0].SearchMatch == nil || (*page.Tickets[0].SearchMatch)["field"] != "turn_comment" {
		t.Fatalf("search: %s", r.Body)
	}

	// Merge: the other open ticket folds into this one.
	other := decodeTicket(t, call(t, s, "POST", "/v1/convai/triage-tickets", adminKey, `{"conversation_id":"conv_2","qa_comment":"Same price issue","agent_id":"`+agent+`","priority":"urgent"}`))
	r = call(t, s, "POST", path+"/merge", adminKey, `{"source_ticket_ids":["`+other.AgentqaTicketID+`"]}`)
	target := decodeTicket(t, r)
	if r.Code != 200 || len(target.ConversationIDs) != 2 || *target.Priority != "urgent" {
		t.Fatalf("merge target: %d %s", r.Code, r.Body)
	}
	src := decodeTicket(t, call(t, s, "GET", "/v1/convai/triage-tickets/"+other.AgentqaTicketID, adminKey, ""))
	if src.Status != "merged" || src.MergedIntoTicketID == nil || *src.MergedIntoTicketID != created.AgentqaTicketID {
		t.Fatalf("merged source: %+v", src)
	}
	wantError(t, call(t, s, "PATCH", "/v1/convai/triage-tickets/"+other.AgentqaTicketID, adminKey, `{"status":"open"}`), 409, "invalid_status_transition")
	wantError(t, call(t, s, "POST", path+"/merge", adminKey, `{"source_ticket_ids":["`+other.AgentqaTicketID+`"]}`), 409, "invalid_status_transition")
	r = call(t, s, "GET", "/v1/convai/triage-tickets?merged_into_ticket_id="+created.AgentqaTicketID, adminKey, "")
	_ = json.Unmarshal(r.Body, &page)
	if len(page.Tickets) != 1 || page.Tickets[0].AgentqaTicketID != other.AgentqaTicketID {
		t.Fatalf("merged_into filter: %s", r.Body)
	}

	// Per-agent listing and assignable users.
	r = call(t, s, "GET", "/v1/convai/agents/"+agent+"/triage-tickets?conversation_id=conv_x", adminKey, "")
	_ = json.Unmarshal(r.Body, &page)
	if len(page.Tickets) != 1 {
		t.Fatalf("per-agent conversation filter: %s", r.Body)
	}
	// The people of the workspace, not its service accounts.
	if r := call(t, s, "POST", "/v1/workspace/invites/add", adminKey, `{"email":"grace@example.com","first_name":"Grace"}`); r.Code != 200 {
		t.Fatalf("add member: %d %s", r.Code, r.Body)
	}
	eventually(t, 5*time.Second, "the member assignable", func() bool {
		r = call(t, s, "GET", "/v1/convai/agents/"+agent+"/triage-tickets/assignable-users", adminKey, "")
		return r.Code == 200 && strings.Contains(string(r.Body), `"email":"grace@example.com"`)
	})
	if strings.Contains(string(r.Body), `"user_id":"sa_admin"`) {
		t.Fatalf("a service account is assignable: %s", r.Body)
	}

	// Delete: only the creator or an admin.
	writer, _, _ := newKey(t, s, adminKey, `["convai_read","convai_write"]`, "")
	wantError(t, call(t, s, "DELETE", "/v1/convai/triage-tickets/"+manual.AgentqaTicketID, writer, ""), 403, "not_ticket_owner")
	if r := call(t, s, "DELETE", "/v1/convai/triage-tickets/"+manual.AgentqaTicketID, adminKey, ""); r.Code != 204 {
		t.Fatalf("delete: %d %s", r.Code, r.Body)
	}
	wantError(t, call(t, s, "GET", "/v1/convai/triage-tickets/"+manual.AgentqaTicketID, adminKey, ""), 404, "ticket_not_found")

	// Other workspaces see nothing.
	acme := createWorkspace(t, s, "Acme")
	wantError(t, call(t, s, "GET", path, acme.APIKey, ""), 404, "ticket_not_found")
	wantError(t, call(t, s, "PATCH", path, acme.APIKey, `{"title":"x"}`), 404, "ticket_not_found")
	wantError(t, call(t, s, "POST", "/v1/convai/agents/"+agent+"/triage-tickets", acme.APIKey, `{"qa_comment":"x"}`), 404, "agent_not_found")
	if r := call(t, s, "GET", "/v1/convai/triage-tickets", acme.APIKey, ""); !strings.Contains(string(r.Body), `"agent_conversation_tickets":[]`) {
		t.Fatalf("other workspace lists: %s", r.Body)
	}
	// Read-only keys read but do not write.
	reader, _, _ := newKey(t, s, adminKey, `["convai_read"]`, "")
	if r := call(t, s, "GET", path, reader, ""); r.Code != 200 {
		t.Fatalf("reader get: %d", r.Code)
	}
	wantError(t, call(t, s, "POST", path+"/comments", reader, `{"comment":"x"}`), 403, "missing_permission")
}

// Writers to one ticket at once each land: forty comments sent together
// are forty comments. Every writer that lost an append to another read
// and appended again at once, so under a crowd some ran out of attempts
// and were answered 409 concurrent_update (2 to 7 of 40 here, before).
func TestConcurrentCommentsOnOneTicketAllLand(t *testing.T) {
	t.Parallel()
	s := startAdmin(t)
	tk := createTicket(t, s, newAgent(t, s, adminKey, "Busy"), `{"qa_comment":"Everyone looks at this one"}`)
	path := "/v1/convai/triage-tickets/" + tk.AgentqaTicketID
	const writers = 40
	answers := make([]response, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			answers[i] = call(t, s, "POST", path+"/comments", adminKey, fmt.Sprintf(`{"comment":"note %d"}`, i), "Idempotency-Key", fmt.Sprintf("note-%d", i))
		})
	}
	wg.Wait()
	for i, r := range answers {
		if r.Code != 200 {
			t.Errorf("comment %d: %d %s", i, r.Code, r.Body)
		}
	}
	if got := decodeTicket(t, call(t, s, "GET", path, adminKey, "")); len(got.TicketComments) != writers {
		t.Fatalf("%d comments on the ticket, want %d", len(got.TicketComments), writers)
	}
}

func TestTicketListingRulesAndStablePaging(t *testing.T) {
	t.Parallel()
	onEachReadIndex(t, testTicketListingRulesAndStablePaging)
}

func testTicketListingRulesAndStablePaging(t *testing.T, s *Stack) {
	agent := newAgent(t, s, adminKey, "Paging")
	create := func(i int) string {
		r := call(t, s, "POST", "/v1/convai/agents/"+agent+"/triage-tickets", adminKey, fmt.Sprintf(`{"qa_comment":"ticket %d"}`, i))
		if r.Code != 201 {
			t.Errorf("create: %d %s", r.Code, r.Body)
			return ""
		}
		return decodeTicket(t, r).AgentqaTicketID
	}
	existing := map[string]bool{}
	for i := range 30 {
		existing[create(i)] = true
	}

	// Page through while other tickets are being created concurrently: no
	// ticket appears twice and none that existed is skipped.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 100; ; i++ {
			select {
			case <-stop:
				return
			default:
				create(i)
			}
		}
	}()
	seen := map[string]int{}
	cursor := ""
	for pages := 0; ; pages++ {
		q := "/v1/convai/triage-tickets?page_size=4"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		r := call(t, s, "GET", q, adminKey, "")
		var p ticketPage
		if err := json.Unmarshal(r.Body, &p); err != nil || r.Code != 200 {
			t.Fatalf("page: %d %s", r.Code, r.Body)
		}
		for _, tk := range p.Tickets {
			seen[tk.AgentqaTicketID]++
		}
		if !p.HasMore {
			break
		}
		cursor = *p.NextCursor
	}
	close(stop)
	wg.Wait()
	for id, n := range seen {
		if n > 1 {
			t.Fatalf("ticket %s listed %d times", id, n)
		}
	}
	for id := range existing {
		if seen[id] != 1 {
			t.Fatalf("ticket %s existed before paging began but was skipped", id)
		}
	}

	for q, loc := range map[string]string{
		"page_size=0": `["query","page_size"]`, "page_size=101": `["query","page_size"]`, "page_size=x": `["query","page_size"]`,
		"status=pending": `["query","status"]`, "sources=robot": `["query","sources",0]`, "sort_by=name": `["query","sort_by"]`,
		"cursor=forged": `["query","cursor"]`,
	} {
		r := call(t, s, "GET", "/v1/convai/triage-tickets?"+q, adminKey, "")
		if r.Code != 422 || !strings.Contains(string(r.Body), `"loc":`+loc) {
			t.Errorf("%s: %d %s", q, r.Code, r.Body)
		}
	}
	// A cursor is bound to its filters.
	r := call(t, s, "GET", "/v1/convai/triage-tickets?page_size=2", adminKey, "")
	var p ticketPage
	_ = json.Unmarshal(r.Body, &p)
	r = call(t, s, "GET", "/v1/convai/triage-tickets?page_size=2&status=open&cursor="+url.QueryEscape(*p.NextCursor), adminKey, "")
	if r.Code != 422 {
		t.Fatalf("cursor reused with other filters: %d", r.Code)
	}
	// Default page size is 100; filters combine.
	for i := len(seen); i <= 100; i++ {
		create(1000 + i)
	}
	r = call(t, s, "GET", "/v1/convai/triage-tickets?status=open&sources=manual&assignee_user_id=unassigned", adminKey, "")
	_ = json.Unmarshal(r.Body, &p)
	if len(p.Tickets) != 100 || !p.HasMore {
		t.Fatalf("default page: %d tickets, has_more %v", len(p.Tickets), p.HasMore)
	}

	// Idempotent create: the same Idempotency-Key gives one ticket.
	a := call(t, s, "POST", "/v1/convai/agents/"+agent+"/triage-tickets", adminKey, `{"qa_comment":"once"}`, "Idempotency-Key", "tk-once")
	b := call(t, s, "POST", "/v1/convai/agents/"+agent+"/triage-tickets", adminKey, `{"qa_comment":"once"}`, "Idempotency-Key", "tk-once")
	if decodeTicket(t, a).AgentqaTicketID != decodeTicket(t, b).AgentqaTicketID {
		t.Fatal("a retried create made a second ticket")
	}
	r = call(t, s, "GET", "/v1/convai/triage-tickets?search=once", adminKey, "")
	_ = json.Unmarshal(r.Body, &p)
	if len(p.Tickets) != 1 {
		t.Fatalf("retried create listed %d times", len(p.Tickets))
	}
}

func TestTicketListingFilters(t *testing.T) {
	t.Parallel()
	onEachReadIndex(t, testTicketListingFilters)
}

func testTicketListingFilters(t *testing.T, s *Stack) {
	a1, a2 := newAgent(t, s, adminKey, "One"), newAgent(t, s, adminKey, "Two")
	mk := func(agent, body string) ticket {
		r := call(t, s, "POST", "/v1/convai/triage-tickets", adminKey, body[:len(body)-1]+`,"agent_id":"`+agent+`"}`)
		if r.Code != 201 {
			t.Fatalf("create: %d %s", r.Code, r.Body)
		}
		return decodeTicket(t, r)
	}
	low := mk(a1, `{"conversation_id":"c1","qa_comment":"low one","priority":"low","labels":["billing"]}`)
	urgent := mk(a1, `{"conversation_id":"c2","qa_comment":"urgent one","priority":"urgent","issue_type":"tool_issue"}`)
	byAgent := mk(a2, `{"conversation_id":"c3","qa_comment":"raised by the agent","source":"agent","priority":"high"}`)
	none := mk(a2, `{"conversation_id":"c4","qa_comment":"no priority"}`)

	ids := func(query string) []string {
		t.Helper()
		r := call(t, s, "GET", "/v1/convai/triage-tickets?"+query, adminKey, "")
		var p ticketPage
		if err := json.Unmarshal(r.Body, &p); err != nil || r.Code != 200 {
			t.Fatalf("%s: %d %s", query, r.Code, r.Body)
		}
		var out []string
		for _, tk := range p.Tickets {
			out = append(out, tk.AgentqaTicketID)
		}
		return out
	}
	for query, want := range map[string][]string{
		"":                                 {none.AgentqaTicketID, byAgent.AgentqaTicketID, urgent.AgentqaTicketID, low.AgentqaTicketID},
		"sort_by=priority":                 {urgent.AgentqaTicketID, byAgent.AgentqaTicketID, low.AgentqaTicketID, none.AgentqaTicketID},
		"agent_id=" + a2:                   {none.AgentqaTicketID, byAgent.AgentqaTicketID},
		"priorities=low&priorities=urgent": {urgent.AgentqaTicketID, low.AgentqaTicketID},
		"sources=agent":                    {byAgent.AgentqaTicketID},
		"owner_user_id=agent":              {byAgent.AgentqaTicketID},
		"owner_user_id=sa_admin":           {none.AgentqaTicketID, byAgent.AgentqaTicketID, urgent.AgentqaTicketID, low.AgentqaTicketID},
		"label=billing":                    {low.AgentqaTicketID},
		"issue_type=tool_issue":            {urgent.AgentqaTicketID},
		"search=RAISED":                    {byAgent.AgentqaTicketID},
		"status=open&assignee_user_id=unassigned": {none.AgentqaTicketID, byAgent.AgentqaTicketID, urgent.AgentqaTicketID, low.AgentqaTicketID},
	} {
		if got := ids(query); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%q: got %v, want %v", query, got, want)
		}
	}
	// A deleted agent's tickets are no longer listed.
	call(t, s, "DELETE", "/v1/convai/agents/"+a2, adminKey, "")
	eventually(t, 5*time.Second, "tickets of the deleted agent disappear", func() bool { return len(ids("")) == 2 })
}
