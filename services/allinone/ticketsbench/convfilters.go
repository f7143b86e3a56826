package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/services/allinone/internal/benchkit"
	"github.com/voiceai-platform/voiceai/services/allinone/internal/benchproc"
)

// (h) the conversations listing under each triage filter the SDK sends,
// at n conversations (alone: `go run ./services/allinone/ticketsbench
// -section conversations`).
func runConversationFilters(n, requests int) error {
	dir, err := os.MkdirTemp("", "voiceai-ticketsbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bins, err := benchproc.Build(dir, "./services/allinone")
	if err != nil {
		return err
	}
	p, err := startPlatform(bins["allinone"], filepath.Join(dir, "data"))
	if err != nil {
		return err
	}
	defer func() { p.Stop() }()
	return p.conversationFilters(n, requests)
}

func (p *platform) conversationFilters(n, requests int) error {
	started := time.Now()
	if err := p.seedTriageConversations(n); err != nil {
		return err
	}
	tag, err := p.annotateConversations(n)
	if err != nil {
		return err
	}
	fmt.Printf("(h) %d conversations seeded and annotated in %s; the platform's peak memory %d MiB\n", n, time.Since(started).Round(time.Second), p.PeakRSSKiB()/1024)
	filters := []struct{ name, query string }{
		{"none", ""},
		{"call_successful", "call_successful=failure"},
		{"evaluation_params", "evaluation_params=accuracy:failure"},
		{"data_collection eq", "data_collection_params=city:eq:Paris"},
		{"data_collection gt", "data_collection_params=amount:gt:400"},
		{"tool_names", "tool_names=refund"},
		{"tool_names_errored", "tool_names_errored=refund"},
		{"call_duration", "call_duration_min_secs=300&call_duration_max_secs=400"},
		// The worst cases: filters no index term serves, matching few (1 in 500 and 1 in 600), walk
		// every conversation that collected the field, or every conversation.
		{"data gt (rare)", "data_collection_params=amount:gt:498"},
		{"duration (rare)", "call_duration_min_secs=599"},
		{"rating_min", "rating_min=4"},
		{"rating_max", "rating_max=2"},
		{"search (rare word)", "search=chargeback"},
		{"search (two words)", "search=refund+denied"},
		{"tag_ids", "tag_ids=" + tag},
		{"exclude_statuses", "exclude_statuses=in-progress"},
		{"summary_mode", "summary_mode=include"},
		{"several at once", "call_successful=failure&tool_names=refund&evaluation_params=accuracy:failure&data_collection_params=city:eq:Lima&search=refund"},
	}
	kinds := make([]struct{ name, path string }, len(filters))
	for i, f := range filters {
		kinds[i].name, kinds[i].path = f.name, "/v1/convai/conversations?page_size=100&"+f.query
	}
	took, err := p.measure(requests, kinds)
	if err != nil {
		return err
	}
	fmt.Printf("(h) conversations listing p50 (page of 100) at %d conversations, by filter:\n", n)
	for _, f := range filters {
		d := took[f.name]
		fmt.Printf("    %-20s %8s (goal < 50ms: %s)\n", f.name, d.Round(10*time.Microsecond), benchkit.Verdict(d < 50*time.Millisecond))
	}
	return nil
}

// seedTriageConversations publishes n conversations whose filtered fields
// vary: outcome, duration, the tools called (and errored), the analysis
// (an evaluation and two collected values) and the transcript's words
// (one conversation in a thousand says "chargeback").
func (p *platform) seedTriageConversations(n int) error {
	return p.WithJetStream(func(js jetstream.JetStream) error {
		pub := &pipeline{js: js}
		base := time.Now().Add(-2 * time.Hour)
		for i := 1; i <= n; i++ {
			conv, at := fmt.Sprintf("conv_tri%06d", i), base.Add(time.Duration(i)*time.Millisecond)
			words := []string{"my refund is denied", "where is my bag", "please move my booking", "thanks for the help"}[i%4]
			if i%1000 == 0 {
				words += " chargeback"
			}
			agentTurn := map[string]any{"role": "agent", "message": "Let me check " + words, "time_in_call_secs": 3}
			if i%4 == 0 {
				agentTurn["tool_calls"] = []any{map[string]any{"request_id": "r", "tool_name": "refund", "params_as_json": "{}", "tool_has_been_called": true}}
				agentTurn["tool_results"] = []any{map[string]any{"request_id": "r", "tool_name": "refund", "result_value": "x", "is_error": i%8 == 0, "tool_has_been_called": true}}
			}
			accuracy := "success"
			if i%5 == 0 {
				accuracy = "failure"
			}
			ended := map[string]any{
				"conversation_id": conv, "agent_id": p.agentID, "call_successful": []string{"success", "success", "failure"}[i%3],
				"call_duration_secs": i % 600,
				"transcript":         []any{map[string]any{"role": "user", "message": words, "time_in_call_secs": 0}, agentTurn},
				"analysis": map[string]any{
					"transcript_summary":          "The caller asked: " + words,
					"evaluation_criteria_results": map[string]any{"accuracy": map[string]any{"criteria_id": "accuracy", "result": accuracy}},
					"data_collection_results": map[string]any{
						"city":   map[string]any{"data_collection_id": "city", "value": []string{"Denver", "Paris", "Lima"}[i%3]},
						"amount": map[string]any{"data_collection_id": "amount", "value": i % 500}},
				},
			}
			if err := p.publishConversation(pub, conv, at, ended, i == n); err != nil {
				return err
			}
		}
		return p.waitListed(fmt.Sprintf("conv_tri%06d", n), 10*time.Minute)
	})
}

// annotateConversations gives feedback (a like or a dislike) to one
// conversation in a hundred and a tag to another one in a hundred, through
// the API, and returns the tag.
func (p *platform) annotateConversations(n int) (string, error) {
	b, code, err := p.api.Do("POST", "/v1/convai/tags", `{"title":"Bench"}`, "")
	var tag struct {
		ID string `json:"tag_id"`
	}
	if err != nil || code != 200 || json.Unmarshal(b, &tag) != nil {
		return "", fmt.Errorf("create tag: %d %.200s %v", code, b, err)
	}
	_, err = inParallel(n/100, func(i int64) error {
		feedback := []string{"like", "dislike"}[i%2]
		conv := url.PathEscape(fmt.Sprintf("conv_tri%06d", i*100))
		if b, code, err := p.api.Do("POST", "/v1/convai/conversations/"+conv+"/feedback", `{"feedback":"`+feedback+`"}`, ""); err != nil || code != 200 {
			return fmt.Errorf("feedback: %d %.200s %v", code, b, err)
		}
		conv = url.PathEscape(fmt.Sprintf("conv_tri%06d", i*100-50))
		if b, code, err := p.api.Do("POST", "/v1/convai/conversations/"+conv+"/tags", `{"tag_ids":["`+tag.ID+`"]}`, ""); err != nil || code != 204 {
			return fmt.Errorf("tag: %d %.200s %v", code, b, err)
		}
		return nil
	})
	return tag.ID, err
}
