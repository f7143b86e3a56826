package qaworker

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/wire"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// NegativeSentimentScore is the sentiment_score at or below which a
// conversation_ended raises a ticket even when overall_sentiment does not
// say "negative" (scores run from -1 to 1).
const NegativeSentimentScore = -0.5

// envelope is a spec-6 platform event.
type escalationData struct {
	ConversationID    string `json:"conversation_id"`
	AgentID           string `json:"agent_id"`
	EscalationReason  string `json:"escalation_reason"`
	EscalationTrigger string `json:"escalation_trigger"`
	TargetQueue       string `json:"target_queue"`
	ContextSummary    string `json:"context_summary"`
}

type endedData struct {
	ConversationID    string   `json:"conversation_id"`
	AgentID           string   `json:"agent_id"`
	TopicsDiscussed   []string `json:"topics_discussed"`
	EscalationOccured bool     `json:"escalation_occurred"`
	SentimentAnalysis struct {
		OverallSentiment string   `json:"overall_sentiment"`
		SentimentScore   *float64 `json:"sentiment_score"`
	} `json:"sentiment_analysis"`
}

// handlePlatform raises (or joins) a conversation's ticket for each
// escalation and each conversation that ended badly: a conversation's
// reports in stream order, conversations at once (up to Parallel), and the
// workspaces of a batch in turn, so that one workspace's flood of
// conversations does not hold another's behind all of its own.
func (w *Worker) handlePlatform(ctx context.Context, batch []app.QAMessage) error {
	type conversation struct {
		workspace string
		reports   []app.ConversationReport
		messages  []app.QAMessage
	}
	byConversation := map[[2]string]*conversation{}
	var order []*conversation
	for _, m := range batch {
		r, ok := w.reportOf(m)
		if !ok {
			w.handled.WithLabelValues("platform", "skipped").Inc()
			continue
		}
		key := [2]string{r.WorkspaceID, r.ConversationID}
		c := byConversation[key]
		if c == nil {
			c = &conversation{workspace: r.WorkspaceID}
			byConversation[key] = c
			order = append(order, c)
		}
		c.reports, c.messages = append(c.reports, r), append(c.messages, m)
	}
	eg, ctx := errgroup.WithContext(ctx)
	eg.SetLimit(w.Parallel)
	for _, c := range inTurns(order, func(c *conversation) string { return c.workspace }) {
		eg.Go(func() error {
			for i, r := range c.reports {
				m := c.messages[i]
				err := inTrace(ctx, m.Traceparent, "qa ticket from conversation", func(ctx context.Context) error {
					_, err := w.App.RaiseFromConversation(ctx, r)
					return err
				})
				if err != nil {
					if !permanent(err) {
						return err
					}
					w.skip("platform", "platform event not ticketed", m, err)
					continue
				}
				w.handled.WithLabelValues("platform", "ticketed").Inc()
			}
			return nil
		})
	}
	return eg.Wait()
}

// inTurns orders items so that their groups (by group) take turns: the
// first of each group in the order the groups first appear, then the
// second of each, and so on; within a group, items keep their order.
func inTurns[T any](items []T, group func(T) string) []T {
	var groups []string
	queues := map[string][]T{}
	for _, it := range items {
		g := group(it)
		if _, ok := queues[g]; !ok {
			groups = append(groups, g)
		}
		queues[g] = append(queues[g], it)
	}
	out := make([]T, 0, len(items))
	for len(out) < len(items) {
		for _, g := range groups {
			if q := queues[g]; len(q) > 0 {
				out, queues[g] = append(out, q[0]), q[1:]
			}
		}
	}
	return out
}

// reportOf is the ticket report a platform event calls for, if any.
func (w *Worker) reportOf(m app.QAMessage) (app.ConversationReport, bool) {
	ws, name, ok := events.ParsePlatformSubject(m.Subject)
	if !ok || m.Err != nil {
		return app.ConversationReport{}, false
	}
	var env wire.Envelope
	if err := json.Unmarshal(m.Data, &env); err != nil {
		return app.ConversationReport{}, false
	}
	r := app.ConversationReport{WorkspaceID: ws, At: env.At(m.Stored), EventID: "platform/" + strconv.FormatUint(m.Seq, 10)}
	switch name {
	case "escalation_triggered":
		var d escalationData
		if json.Unmarshal(env.Data, &d) != nil {
			return r, false
		}
		r.AgentID, r.ConversationID, r.Source = d.AgentID, d.ConversationID, domain.SourceAgent
		r.Comment = fmt.Sprintf("The agent escalated the conversation to %s: %s (trigger: %s).",
			orNone(d.TargetQueue), orNone(d.EscalationReason), orNone(d.EscalationTrigger))
		if d.ContextSummary != "" {
			r.Comment += " Context: " + d.ContextSummary
		}
	case "conversation_ended":
		var d endedData
		if json.Unmarshal(env.Data, &d) != nil {
			return r, false
		}
		r.AgentID, r.ConversationID = d.AgentID, d.ConversationID
		s := d.SentimentAnalysis
		negative := strings.Contains(strings.ToLower(s.OverallSentiment), "negative") ||
			(s.SentimentScore != nil && *s.SentimentScore <= NegativeSentimentScore)
		switch {
		case d.EscalationOccured:
			r.Source = domain.SourceAgent
			r.Comment = "The conversation ended after an escalation."
		case negative:
			r.Source = domain.SourceQA
			r.Comment = "The conversation ended with negative sentiment"
			if s.SentimentScore != nil {
				r.Comment += fmt.Sprintf(" (score %.2f)", *s.SentimentScore)
			}
			r.Comment += "."
		default:
			return r, false
		}
		if len(d.TopicsDiscussed) > 0 {
			r.Comment += " Topics: " + strings.Join(d.TopicsDiscussed, ", ") + "."
		}
	default:
		return r, false
	}
	if r.AgentID == "" || r.ConversationID == "" {
		return r, false
	}
	return r, true
}

func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(not given)"
	}
	return s
}
