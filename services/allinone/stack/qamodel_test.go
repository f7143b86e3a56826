package stack

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/llm/llmtest"
	"github.com/voiceai-platform/voiceai/pkg/wire"
)

// With VOICEAI_QA_CLUSTERING=model, a model decides what the rules
// cannot see: two tickets that share no content word report the same
// problem, and their issue type. A model that cannot answer leaves the
// rules to decide, and the ticket says so.
func TestModelClustersTickets(t *testing.T) {
	t.Parallel()
	candidate := regexp.MustCompile(`(?m)^- (\S+): (.*)$`)
	model := llmtest.NewServer(func(req llmtest.Request) llmtest.Reply {
		prompt := req.Messages[len(req.Messages)-1].Content
		newText, _, _ := strings.Cut(prompt, "CANDIDATE tickets:")
		if strings.Contains(newText, "parking") {
			return llmtest.Error(400, "invalid_request_error", "this model does not do parking")
		}
		var similar []string
		for _, m := range candidate.FindAllStringSubmatch(prompt, -1) {
			// A refund and money back are one problem, worded apart.
			if strings.Contains(newText, "refund") && strings.Contains(m[2], "money back") ||
				strings.Contains(newText, "money back") && strings.Contains(m[2], "refund") {
				similar = append(similar, fmt.Sprintf("%q", m[1]))
			}
		}
		return llmtest.OK(fmt.Sprintf(`{"similar_ticket_ids":[%s],"issue_type":"knowledge_gap","reason":"Both callers want a cancelled booking refunded."}`,
			strings.Join(similar, ",")))
	})
	t.Cleanup(model.Close)
	s := startAdmin(t, func(c *Config) {
		c.QAWorker.Clustering, c.QAWorker.BaseURL, c.QAWorker.LLMModel = "model", model.URL, "triage-model"
	})
	agent := agentWith(t, s)
	for conv, reason := range map[string]string{
		"conv_refund":  "The caller asked for a refund of a cancelled booking",
		"conv_money":   "Customer wants their money back after cancelling",
		"conv_parking": "Caller asked about parking near the restaurant",
	} {
		body := fmt.Sprintf(`{"event":"escalation_triggered","timestamp":"2026-11-23T10:00:00Z","data":{"call_id":"call_%s","conversation_id":%q,
		  "agent_id":%q,"escalation_reason":%q,"escalation_trigger":"user_request","target_queue":"billing","context_summary":"","conversation_history":""}}`,
			conv, conv, agent, reason)
		if r := call(t, s, "POST", "/v1/convai/events", adminKey, body); r.Code/100 != 2 {
			t.Fatalf("ingest: %d %s", r.Code, r.Body)
		}
	}
	label := func(tk ticket) string {
		i := slices.IndexFunc(tk.Labels, func(l string) bool { return strings.HasPrefix(l, "cluster-") })
		if i < 0 {
			return ""
		}
		return tk.Labels[i]
	}
	// The group's label reaches its tickets one write each (the first
	// ticket, clustered before, is labelled when the second joins it): wait
	// for both, not only for every ticket to be clustered.
	byConv := map[string]ticket{}
	grouped := func() bool {
		all := agentTickets(t, s, agent, "")
		clear(byConv)
		for _, tk := range all {
			if tk.NeedsClustering {
				return false
			}
			byConv[tk.ConversationIDs[0]] = tk
		}
		refund, money := byConv["conv_refund"], byConv["conv_money"]
		return len(all) == 3 && label(refund) != "" && label(refund) == label(money)
	}
	// Generous for a loaded CI machine: a pass that fails is redelivered
	// with a growing back-off.
	deadline := time.Now().Add(60 * time.Second)
	for !grouped() {
		if time.Now().After(deadline) {
			t.Fatalf("60 s after the reports, not every ticket is clustered and grouped: %+v", agentTickets(t, s, agent, ""))
		}
		time.Sleep(10 * time.Millisecond)
	}
	refund, money, parking := byConv["conv_refund"], byConv["conv_money"], byConv["conv_parking"]
	if label(refund) == "" || label(refund) != label(money) {
		t.Fatalf("the model grouped refund and money back: labels %v and %v (all: %+v)", refund.Labels, money.Labels, byConv)
	}
	for _, tk := range []ticket{refund, money} {
		if tk.IssueType == nil || *tk.IssueType != "knowledge_gap" {
			t.Fatalf("issue type from the model: %+v", tk)
		}
	}
	said := func(tk ticket, what string) bool {
		return slices.ContainsFunc(tk.TicketComments, func(c wire.Comment) bool {
			return strings.Contains(c.Comment, what)
		})
	}
	if !said(money, "the model says: Both callers want a cancelled booking refunded") && !said(refund, "the model says") {
		t.Fatalf("the clustering comment gives the model's reason: %+v / %+v", refund.TicketComments, money.TicketComments)
	}
	if label(parking) != "" || !said(parking, "the model could not answer") {
		t.Fatalf("a ticket the model could not judge is clustered by the rules, and says so: %+v", parking)
	}
}
