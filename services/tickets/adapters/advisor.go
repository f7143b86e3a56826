package adapters

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/voiceai-platform/voiceai/pkg/llm"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// ModelAdvisor clusters through an OpenAI-compatible chat model
// (app.ClusterAdvisor): one request per ticket that needs clustering,
// answered as a JSON object, at temperature 0.
type ModelAdvisor struct {
	Client *llm.Client
}

// Name is "openai/<model>".
func (m ModelAdvisor) Name() string { return "openai/" + m.Client.Model() }

const advisorPrompt = `You triage quality tickets of one voice agent. Each ticket reports something that went wrong in its conversations or tests.
Given a NEW ticket and CANDIDATE tickets of the same agent, decide:
- which candidates report the same underlying problem as the new ticket (the same cause, not merely the same topic or wording);
- the new ticket's issue type, only if its text makes it clear, from: %s.
Answer with a JSON object only: {"similar_ticket_ids": ["<candidate id>", ...], "issue_type": "<type>" or null, "reason": "<one sentence>"}.`

// maxItemText bounds each ticket's text in the prompt.
const maxItemText = 1500

// Advise asks the model about t.
func (m ModelAdvisor) Advise(ctx context.Context, t domain.ClusterItem, candidates []domain.ClusterItem) (app.ClusterAdvice, error) {
	var b strings.Builder
	b.WriteString("NEW ticket " + t.ID + ":\n" + clipText(t.Text) + "\n\nCANDIDATE tickets:\n")
	if len(candidates) == 0 {
		b.WriteString("(none)\n")
	}
	for _, c := range candidates {
		b.WriteString("- " + c.ID + ": " + strings.ReplaceAll(clipText(c.Text), "\n", " ") + "\n")
	}
	zero := 0.0
	res, err := m.Client.Chat(ctx, llm.ChatRequest{JSONObject: true, Temperature: &zero, Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: fmt.Sprintf(advisorPrompt, strings.Join(domain.IssueTypes, ", "))},
		{Role: llm.RoleUser, Content: b.String()},
	}})
	if err != nil {
		return app.ClusterAdvice{}, err
	}
	var out struct {
		SimilarTicketIDs []string `json:"similar_ticket_ids"`
		IssueType        *string  `json:"issue_type"`
		Reason           string   `json:"reason"`
	}
	content := strings.TrimSpace(res.Message.Content)
	content = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(content, "```json"), "```"), "```")
	if err := json.Unmarshal([]byte(content), &out); err != nil {
		return app.ClusterAdvice{}, fmt.Errorf("the model's answer is not the JSON asked for: %.200q", res.Message.Content)
	}
	advice := app.ClusterAdvice{SimilarTo: out.SimilarTicketIDs, Reason: out.Reason}
	if out.IssueType != nil {
		advice.IssueType = *out.IssueType
	}
	return advice, nil
}

func clipText(s string) string {
	if len(s) <= maxItemText {
		return s
	}
	return strings.ToValidUTF8(s[:maxItemText], "") + "…"
}
