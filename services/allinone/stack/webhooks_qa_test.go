package stack

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/api"
)

// ticketEvent is a delivered ticket_* event, decoded.
type ticketEvent struct {
	Event string
	Data  struct {
		Ticket         ticket   `json:"ticket"`
		ChangedFields  []string `json:"changed_fields"`
		PreviousStatus string   `json:"previous_status"`
	}
	ticket map[string]any // the ticket as sent, to compare its shape
}

// startWithTicketHook starts a stack and a receiver its webhook sends
// every ticket event to.
func startWithTicketHook(t *testing.T) (*Stack, *hookReceiver) {
	t.Helper()
	s := startAdmin(t, localHooks)
	rcv := newFailableReceiver(t)
	rcv.secret = "whsec_qa_ticket_events_0123456789"
	createWebhook(t, s, `{"url":"`+rcv.URL+`/tickets","secret":"`+rcv.secret+`",
	  "events":["ticket_created","ticket_updated","ticket_status_changed","ticket_commented","ticket_merged"]}`)
	return s, rcv
}

// ticketEvents are the deliveries so far about tickets match accepts,
// checked: signed, and data as the document describes it.
func (r *hookReceiver) ticketEvents(t *testing.T, match func(ticket) bool) []ticketEvent {
	t.Helper()
	var out []ticketEvent
	for _, d := range r.all() {
		var env struct {
			Event string          `json:"event"`
			Data  json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(d.body, &env); err != nil || !d.signed || env.Event != d.event {
			t.Fatalf("delivery %s (signed %v, header %s): %v", d.body, d.signed, d.event, err)
		}
		if err := api.CheckJSON("TicketEventData", env.Data); err != nil {
			t.Fatalf("%s data against the document: %v\n%s", env.Event, err, env.Data)
		}
		ev := ticketEvent{Event: env.Event}
		var raw struct {
			Ticket map[string]any `json:"ticket"`
		}
		if json.Unmarshal(env.Data, &ev.Data) != nil || json.Unmarshal(env.Data, &raw) != nil {
			t.Fatalf("%s data %s", env.Event, env.Data)
		}
		ev.ticket = raw.Ticket
		if match(ev.Data.Ticket) {
			out = append(out, ev)
		}
	}
	return out
}

// awaitTicketEvent waits for a delivery of event about a ticket match
// accepts, and returns the first.
func (r *hookReceiver) awaitTicketEvent(t *testing.T, event string, match func(ticket) bool) ticketEvent {
	t.Helper()
	var found ticketEvent
	eventually(t, 30*time.Second, event+" is delivered", func() bool {
		for _, ev := range r.ticketEvents(t, match) {
			if ev.Event == event {
				found = ev
				return true
			}
		}
		return false
	})
	return found
}

// sameShape fails unless the delivered ticket has exactly the fields the
// API answers for it.
func sameShape(t *testing.T, s *Stack, ev ticketEvent) {
	t.Helper()
	answered := call(t, s, "GET", "/v1/convai/triage-tickets/"+ev.Data.Ticket.AgentqaTicketID, adminKey, "").JSON(t)
	// Extensions only a ticket's GET answers (schemas.yaml says so), not
	// the ticket itself.
	delete(answered, "verdict_labels")
	delete(answered, "deleted_conversation_ids")
	if got, want := slices.Sorted(maps.Keys(ev.ticket)), slices.Sorted(maps.Keys(answered)); !slices.Equal(got, want) {
		t.Fatalf("%s carries a ticket with fields %v; the API answers %v", ev.Event, got, want)
	}
}

// The ticket a failing test opens reaches a webhook as ticket_created,
// as a ticket created through the API does; so does what the QA worker
// does to it next: the clustering step's changes (ticket_updated), the
// next failure (ticket_commented: one comment per failing invocation) and
// a failure after it was resolved (ticket_status_changed, reopened).
func TestWebhooksHearOfTicketsFailingTestsOpen(t *testing.T) {
	t.Parallel()
	s, rcv := startWithTicketHook(t)
	agent := agentWith(t, s)
	vouchers := createTest(t, s, unknownTest)
	ofTest := func(tk ticket) bool { return tk.TestFailures != nil && tk.TestFailures.TestID == vouchers }

	first := runAndWait(t, s, agent, 1, vouchers)
	created := rcv.awaitTicketEvent(t, "ticket_created", ofTest)
	tk := created.Data.Ticket
	if tk.Source != "qa" || tk.Status != "open" || tk.OwnerUserID != "qa-worker" || !slices.Contains(tk.Labels, "test-failure") ||
		tk.TestFailures.FailedRuns != 1 || len(tk.TestFailures.Invocations) != 1 || tk.TestFailures.Invocations[0].InvocationID != first {
		t.Fatalf("ticket_created carries %+v", tk)
	}
	sameShape(t, s, created)

	clustered := rcv.awaitTicketEvent(t, "ticket_updated", func(tk ticket) bool { return ofTest(tk) && !tk.NeedsClustering })
	if !slices.Contains(clustered.Data.ChangedFields, "needs_clustering") || clustered.Data.Ticket.IssueType == nil ||
		*clustered.Data.Ticket.IssueType != "knowledge_gap" || !slices.Contains(clustered.Data.ChangedFields, "issue_type") {
		t.Fatalf("the clustering step's ticket_updated: changed %v, ticket %+v", clustered.Data.ChangedFields, clustered.Data.Ticket)
	}

	second := runAndWait(t, s, agent, 1, vouchers)
	commented := rcv.awaitTicketEvent(t, "ticket_commented", func(tk ticket) bool { return ofTest(tk) && tk.TestFailures.FailedRuns == 2 })
	if tk := commented.Data.Ticket; tk.AgentqaTicketID != created.Data.Ticket.AgentqaTicketID || len(tk.TestFailures.Invocations) != 2 || tk.TestFailures.Invocations[1].InvocationID != second {
		t.Fatalf("the second failure's ticket_commented carries %+v", tk)
	}
	sameShape(t, s, commented)

	if r := call(t, s, "PATCH", "/v1/convai/triage-tickets/"+tk.AgentqaTicketID, adminKey, `{"status":"resolved"}`); r.Code != 200 {
		t.Fatalf("resolve: %d %s", r.Code, r.Body)
	}
	runAndWait(t, s, agent, 1, vouchers)
	reopened := rcv.awaitTicketEvent(t, "ticket_status_changed", func(tk ticket) bool { return ofTest(tk) && tk.TestFailures.FailedRuns == 3 })
	if reopened.Data.PreviousStatus != "resolved" || reopened.Data.Ticket.Status != "open" {
		t.Fatalf("the reopening failure: previous status %q, ticket %+v", reopened.Data.PreviousStatus, reopened.Data.Ticket)
	}

	// Each change is delivered once: one event per ticket event.
	seen := map[string]int{}
	for _, ev := range rcv.ticketEvents(t, ofTest) {
		seen[ev.Event]++
	}
	if seen["ticket_created"] != 1 || seen["ticket_commented"] != 1 {
		t.Fatalf("deliveries by event: %v", seen)
	}
}

// A ticket the QA worker raises from a conversation that ended badly
// reaches a webhook as ticket_created, the clustering step's changes to
// it as ticket_updated, and an escalation of the same conversation, which
// joins that ticket, as ticket_commented.
func TestWebhooksHearOfTicketsConversationsRaise(t *testing.T) {
	t.Parallel()
	s, rcv := startWithTicketHook(t)
	agent := agentWith(t, s)
	ingest := func(event, data string) { t.Helper(); ingestEvent(t, s, event, data) }
	onConv := func(tk ticket) bool { return slices.Contains(tk.ConversationIDs, "conv_bad") }

	ingest("conversation_ended", fmt.Sprintf(`{"conversation_id":"conv_bad","call_id":"call_bad","agent_id":%q,"turn_count":4,
	  "topics_discussed":["refund"],"sentiment_analysis":{"overall_sentiment":"negative","sentiment_score":-0.9},"escalation_occurred":false}`, agent))
	created := rcv.awaitTicketEvent(t, "ticket_created", onConv)
	if tk := created.Data.Ticket; tk.Source != "qa" || tk.Status != "open" || tk.QAComment == nil {
		t.Fatalf("ticket_created carries %+v", tk)
	}
	sameShape(t, s, created)
	clustered := rcv.awaitTicketEvent(t, "ticket_updated", func(tk ticket) bool { return onConv(tk) && !tk.NeedsClustering })
	if !slices.Contains(clustered.Data.ChangedFields, "needs_clustering") {
		t.Fatalf("the clustering step's ticket_updated: changed %v", clustered.Data.ChangedFields)
	}

	ingest("escalation_triggered", fmt.Sprintf(`{"call_id":"call_bad","conversation_id":"conv_bad","agent_id":%q,
	  "escalation_reason":"The caller asked for a manager","escalation_trigger":"user_request","target_queue":"billing","context_summary":"","conversation_history":"available via the API"}`, agent))
	joined := rcv.awaitTicketEvent(t, "ticket_commented", onConv)
	if joined.Data.Ticket.AgentqaTicketID != created.Data.Ticket.AgentqaTicketID {
		t.Fatalf("the escalation joined %s, not the conversation's ticket %s", joined.Data.Ticket.AgentqaTicketID, created.Data.Ticket.AgentqaTicketID)
	}
}

// A report joining an open ticket that raises its priority reaches a
// webhook as ticket_commented with changed_fields ["priority"], so a
// subscriber following priority changes hears of it.
func TestWebhooksHearOfAPriorityAJoiningReportRaises(t *testing.T) {
	t.Parallel()
	s, rcv := startWithTicketHook(t)
	agent := agentWith(t, s)
	report := func(priority string, want int) ticket {
		t.Helper()
		r := call(t, s, "POST", "/v1/convai/triage-tickets", adminKey,
			fmt.Sprintf(`{"conversation_id":"conv_raise","agent_id":%q,"qa_comment":"Quoted the wrong price (%s).","priority":%q}`, agent, priority, priority))
		if r.Code != want {
			t.Fatalf("report at %s: %d %s", priority, r.Code, r.Body)
		}
		return decodeTicket(t, r)
	}
	created := report("high", 201)
	report("urgent", 200)
	onTicket := func(tk ticket) bool { return tk.AgentqaTicketID == created.AgentqaTicketID }
	joined := rcv.awaitTicketEvent(t, "ticket_commented", onTicket)
	if p := joined.Data.Ticket.Priority; p == nil || *p != "urgent" || !slices.Equal(joined.Data.ChangedFields, []string{"priority"}) {
		t.Fatalf("the joining report's ticket_commented: priority %v, changed_fields %v", p, joined.Data.ChangedFields)
	}
}
