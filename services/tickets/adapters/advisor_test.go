package adapters

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/llm"
	"github.com/voiceai-platform/voiceai/pkg/llm/llmtest"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/app/advisortest"
	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// The model advisor over a chat server whose model thinks the suite's
// mind: the server reads the ticket and candidates back from the prompt.
func TestModelAdvisorConforms(t *testing.T) {
	advisortest.Run(t, func(t *testing.T, mind advisortest.Mind) app.ClusterAdvisor {
		srv := llmtest.NewServer(func(req llmtest.Request) llmtest.Reply {
			ticket, candidates, ok := promptItems(req)
			if !ok {
				return llmtest.Error(400, "invalid_request_error", "not a triage prompt")
			}
			advice, err := mind(ticket, candidates)
			if err != nil {
				return llmtest.Error(400, "invalid_request_error", err.Error())
			}
			answer := map[string]any{"similar_ticket_ids": advice.SimilarTo, "issue_type": nil, "reason": advice.Reason}
			if advice.IssueType != "" {
				answer["issue_type"] = advice.IssueType
			}
			body, _ := json.Marshal(answer)
			return llmtest.OK(string(body))
		})
		t.Cleanup(srv.Close)
		return ModelAdvisor{Client: newLLM(t, srv)}
	})
}

func newLLM(t *testing.T, srv *llmtest.Server) *llm.Client {
	t.Helper()
	c, err := llm.New(llm.Config{BaseURL: srv.URL, Model: "triage-1", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// promptItems reads the ticket and its candidates out of the advisor's
// prompt.
func promptItems(req llmtest.Request) (domain.ClusterItem, []domain.ClusterItem, bool) {
	if len(req.Messages) != 2 {
		return domain.ClusterItem{}, nil, false
	}
	head, list, ok := strings.Cut(req.Messages[1].Content, "\n\nCANDIDATE tickets:\n")
	id, text, ok2 := strings.Cut(strings.TrimPrefix(head, "NEW ticket "), ":\n")
	if !ok || !ok2 {
		return domain.ClusterItem{}, nil, false
	}
	var candidates []domain.ClusterItem
	for _, line := range strings.Split(strings.TrimSuffix(list, "\n"), "\n") {
		if cid, ctext, ok := strings.Cut(strings.TrimPrefix(line, "- "), ": "); ok {
			candidates = append(candidates, domain.ClusterItem{ID: cid, Text: ctext})
		}
	}
	return domain.ClusterItem{ID: id, Text: text}, candidates, true
}

// An answer that is not the JSON asked for is an error, not advice.
func TestModelAdvisorRefusesAGarbledAnswer(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Fixed(0, "They look alike to me."))
	t.Cleanup(srv.Close)
	adv := ModelAdvisor{Client: newLLM(t, srv)}
	if got, err := adv.Advise(t.Context(), domain.ClusterItem{ID: "tkt_1", Text: "refund"}, nil); err == nil {
		t.Fatalf("no error, advice %+v", got)
	}
	if adv.Name() != "openai/triage-1" {
		t.Fatalf("name %q", adv.Name())
	}
}
