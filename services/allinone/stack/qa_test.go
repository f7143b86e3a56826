package stack

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/wire"
)

// agentTickets lists an agent's tickets matching query (all statuses).
func agentTickets(t *testing.T, s *Stack, agent, query string) []ticket {
	t.Helper()
	r := call(t, s, "GET", "/v1/convai/agents/"+agent+"/triage-tickets?page_size=100&"+query, adminKey, "")
	var page struct {
		Tickets []ticket `json:"agent_conversation_tickets"`
	}
	if err := json.Unmarshal(r.Body, &page); r.Code != 200 || err != nil {
		t.Fatalf("list tickets: %d %s", r.Code, r.Body)
	}
	return page.Tickets
}

func getTicket(t *testing.T, s *Stack, id string) ticket {
	t.Helper()
	r := call(t, s, "GET", "/v1/convai/triage-tickets/"+id, adminKey, "")
	var tk ticket
	if err := json.Unmarshal(r.Body, &tk); r.Code != 200 || err != nil {
		t.Fatalf("get ticket: %d %s", r.Code, r.Body)
	}
	return tk
}

// unknownTest fails with the offline model: the agent's configuration
// says nothing about gift vouchers.
const unknownTest = `{"type":"llm","name":"Gift vouchers",
  "chat_history":[{"role":"user","message":"Do you sell gift vouchers?","time_in_call_secs":2}],
  "success_condition":"The agent explains how to buy a gift voucher and what it costs"}`

// A failing test opens exactly one ticket for the agent and test; its
// next failures are recorded on it; a failure after it was resolved
// reopens it; the clustering step sets the issue type the rationale
// states and clears needs_clustering. A passing test opens nothing.
func TestFailingTestsBecomeOneTicket(t *testing.T) {
	t.Parallel()
	s := startForTesting(t)
	agent := agentWith(t, s)
	hours, vouchers := createTest(t, s, hoursTest), createTest(t, s, unknownTest)

	first := runAndWait(t, s, agent, 2, hours, vouchers)
	var tk ticket
	eventually(t, 30*time.Second, "the failing test's ticket is clustered", func() bool {
		list := agentTickets(t, s, agent, "label=test-failure")
		if len(list) > 0 {
			tk = list[0]
		}
		return len(list) == 1 && !tk.NeedsClustering && tk.TestFailures != nil && tk.TestFailures.FailedRuns == 2
	})
	if all := agentTickets(t, s, agent, ""); len(all) != 1 {
		t.Fatalf("%d tickets; want only the failing test's: %+v", len(all), all)
	}
	tf := tk.TestFailures
	if tk.Source != "qa" || tk.Status != "open" || tk.OwnerUserID != "qa-worker" || tf.TestID != vouchers || tf.TestName != "Gift vouchers" ||
		len(tf.Invocations) != 1 || tf.Invocations[0].InvocationID != first || len(tf.Invocations[0].RunIDs) != 2 {
		t.Fatalf("ticket: %+v, failures %+v", tk, tf)
	}
	for _, run := range getInvocation(t, s, first).TestRuns {
		if (run.TestID == vouchers) != slices.Contains(tf.Invocations[0].RunIDs, run.TestRunID) {
			t.Fatalf("run %s of test %s: linked %v", run.TestRunID, run.TestID, tf.Invocations[0].RunIDs)
		}
	}
	if tk.IssueType == nil || *tk.IssueType != "knowledge_gap" {
		t.Fatalf("issue type %v; the offline rationale says the configuration does not cover it", tk.IssueType)
	}
	if !slices.ContainsFunc(tk.TicketComments, func(c wire.Comment) bool {
		return strings.HasPrefix(c.Comment, "Clustered:") && strings.Contains(c.Comment, "knowledge_gap")
	}) {
		t.Fatalf("the clustering step says what it did: %+v", tk.TicketComments)
	}

	// A second failing invocation updates the same ticket.
	second := runAndWait(t, s, agent, 1, vouchers)
	eventually(t, 30*time.Second, "the second failure is recorded", func() bool {
		tk = getTicket(t, s, tk.AgentqaTicketID)
		return tk.TestFailures.FailedRuns == 3
	})
	if n := len(agentTickets(t, s, agent, "")); n != 1 || len(tk.TestFailures.Invocations) != 2 || tk.TestFailures.Invocations[1].InvocationID != second {
		t.Fatalf("%d tickets; invocations %+v", n, tk.TestFailures.Invocations)
	}

	// Resolved, then failing again: reopened, still one ticket.
	if r := call(t, s, "PATCH", "/v1/convai/triage-tickets/"+tk.AgentqaTicketID, adminKey, `{"status":"resolved"}`); r.Code != 200 {
		t.Fatalf("resolve: %d %s", r.Code, r.Body)
	}
	runAndWait(t, s, agent, 1, vouchers)
	eventually(t, 30*time.Second, "the ticket is reopened", func() bool {
		tk = getTicket(t, s, tk.AgentqaTicketID)
		return tk.Status == "open" && tk.TestFailures.FailedRuns == 4
	})
	if n := len(agentTickets(t, s, agent, "")); n != 1 {
		t.Fatalf("%d tickets after the reopening failure", n)
	}
}

// Escalations and conversations that went badly raise tickets; the
// clustering step merges exact duplicates and groups similar tickets.
func TestPlatformEventsRaiseAndClusterTickets(t *testing.T) {
	t.Parallel()
	s := startForTesting(t)
	agent := agentWith(t, s)
	ingest := func(event, data string) { t.Helper(); ingestEvent(t, s, event, data) }
	escalate := func(conv, reason string) {
		ingest("escalation_triggered", fmt.Sprintf(`{"call_id":"call_%s","conversation_id":%q,"agent_id":%q,"escalation_reason":%q,
		  "escalation_trigger":"user_request","target_queue":"billing","context_summary":"","conversation_history":"available via the API"}`, conv, conv, agent, reason))
	}
	ended := func(conv, sentiment string, score float64, escalated bool, topics string) {
		ingest("conversation_ended", fmt.Sprintf(`{"conversation_id":%q,"call_id":"call_%s","agent_id":%q,"turn_count":6,"topics_discussed":[%s],
		  "sentiment_analysis":{"overall_sentiment":%q,"sentiment_score":%v},"knowledge_base_queries":1,"escalation_occurred":%v}`,
			conv, conv, agent, topics, sentiment, score, escalated))
	}

	escalate("conv_a", "The caller wanted a refund the agent does not know the policy for")
	ended("conv_a", "negative", -0.7, true, `"refund"`)   // joins conv_a's ticket
	ended("conv_ok", "positive", 0.8, false, `"booking"`) // nothing to report
	escalate("conv_b", "Caller insisted on a human")      // exact duplicates:
	escalate("conv_c", "Caller insisted on a human")      // merged into conv_b's
	ended("conv_d", "negative", -0.6, false, `"table booking","wrong date","allergy menu"`)
	ended("conv_e", "neutral", -0.8, false, `"table booking","wrong date","allergy menu"`) // similar to conv_d's

	// The worker clusters, merges and labels one ticket event at a time:
	// wait for the end state (five tickets, none waiting to be clustered,
	// one merged, two sharing a cluster label), then check each part.
	var all []ticket
	eventually(t, 30*time.Second, "every report is ticketed, clustered, merged and labelled", func() bool {
		all = agentTickets(t, s, agent, "")
		if len(all) != 5 {
			return false
		}
		merged, labelled := 0, map[string]int{}
		for _, tk := range all {
			if tk.Status != "merged" && tk.NeedsClustering {
				return false
			}
			if tk.Status == "merged" {
				merged++
			}
			for _, l := range tk.Labels {
				if strings.HasPrefix(l, "cluster-") {
					labelled[l]++
				}
			}
		}
		shared := false
		for _, n := range labelled {
			shared = shared || n >= 2
		}
		return merged == 1 && shared
	})
	byConv := map[string]ticket{}
	for _, tk := range all {
		for _, c := range tk.ConversationIDs {
			if tk.Status != "merged" {
				byConv[c] = tk
			}
		}
	}
	if _, ok := byConv["conv_ok"]; ok {
		t.Fatalf("a positive conversation raised a ticket: %+v", all)
	}
	a := byConv["conv_a"]
	if a.Source != "agent" || len(a.TicketComments) < 1 || a.IssueType == nil || *a.IssueType != "knowledge_gap" {
		t.Fatalf("conv_a: escalation plus the ended report on one ticket, knowledge gap: %+v", a)
	}
	b, c := byConv["conv_b"], byConv["conv_c"]
	if b.AgentqaTicketID == "" || b.AgentqaTicketID != c.AgentqaTicketID || !slices.Contains(b.ConversationIDs, "conv_c") {
		t.Fatalf("duplicate escalations: conv_b %+v, conv_c %+v", b, c)
	}
	merged := agentTickets(t, s, agent, "status=merged")
	if len(merged) != 1 || merged[0].MergedIntoTicketID == nil || *merged[0].MergedIntoTicketID != b.AgentqaTicketID {
		t.Fatalf("merged: %+v", merged)
	}
	d, e := byConv["conv_d"], byConv["conv_e"]
	if d.Source != "qa" || e.Source != "qa" || d.AgentqaTicketID == e.AgentqaTicketID {
		t.Fatalf("negative conversations: %+v %+v", d, e)
	}
	label := ""
	for _, l := range e.Labels {
		if strings.HasPrefix(l, "cluster-") {
			label = l
		}
	}
	if label == "" || !slices.Contains(d.Labels, label) {
		t.Fatalf("similar tickets share a cluster label: %v and %v", d.Labels, e.Labels)
	}
	if got := agentTickets(t, s, agent, "label="+label); len(got) != 2 {
		t.Fatalf("the label lists the group: %d tickets", len(got))
	}
	if slices.ContainsFunc(a.Labels, func(l string) bool { return strings.HasPrefix(l, "cluster-") }) {
		t.Fatalf("conv_a's ticket is like no other: %v", a.Labels)
	}

	// Reversible through the API: the label and issue type come off, and
	// asking for clustering again is a PATCH.
	r := call(t, s, "PATCH", "/v1/convai/triage-tickets/"+a.AgentqaTicketID, adminKey, `{"issue_type":null,"needs_clustering":true}`)
	if r.Code != 200 || r.JSON(t)["issue_type"] != nil {
		t.Fatalf("undo: %d %s", r.Code, r.Body)
	}
	eventually(t, 30*time.Second, "the ticket is clustered again", func() bool {
		a = getTicket(t, s, a.AgentqaTicketID)
		return !a.NeedsClustering && a.IssueType != nil && *a.IssueType == "knowledge_gap"
	})
}

// ingestEvent posts a platform event (data is its JSON) through the
// gateway, as a team's call stack does.
func ingestEvent(t *testing.T, s *Stack, event, data string) {
	t.Helper()
	body := fmt.Sprintf(`{"event":%q,"timestamp":"2026-11-23T10:00:00Z","data":%s}`, event, data)
	if r := call(t, s, "POST", "/v1/convai/events", adminKey, body); r.Code/100 != 2 {
		t.Fatalf("ingest %s: %d %s", event, r.Code, r.Body)
	}
}
