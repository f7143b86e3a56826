package judgeeval

import (
	"context"
	"strings"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/llm"
	"github.com/voiceai-platform/voiceai/pkg/llm/llmtest"
	"github.com/voiceai-platform/voiceai/services/testing/runner"
)

// An OpenAI-compatible judge (what judgebench measures when
// VOICEAI_JUDGE_EVAL_* are set), built as the runner builds one, is
// measured over HTTP: a scripted server fails every reply with "not" in
// it, cannot decide on a question, and passes the rest; the report counts
// exactly what the same rule gives on the set.
func TestRunMeasuresAnOpenAICompatibleJudge(t *testing.T) {
	rule := func(reply string) string {
		switch {
		case strings.Contains(reply, "?"):
			return "unknown"
		case strings.Contains(reply, " not "):
			return Fail
		}
		return Pass
	}
	srv := llmtest.NewServer(func(req llmtest.Request) llmtest.Reply {
		prompt := req.Messages[len(req.Messages)-1].Content
		_, after, _ := strings.Cut(prompt, "Reply under test: ")
		reply, _, _ := strings.Cut(after, "\nSuccess condition 1: ")
		switch rule(reply) {
		case Fail:
			return llmtest.Verdict("failure", "says not")
		case Pass:
			return llmtest.Verdict("success", "fine")
		}
		return llmtest.OK("I cannot tell.")
	})
	defer srv.Close()
	client, err := llm.New(llm.Config{BaseURL: srv.URL, Model: "scripted-judge"})
	if err != nil {
		t.Fatal(err)
	}
	cases, err := Set(Heldout)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(context.Background(), runner.OpenAI{Client: client}, Heldout, cases, Options{Parallel: 4})
	if err != nil {
		t.Fatal(err)
	}
	var want Tally
	for _, c := range cases {
		want.Add(rule(c.Reply), c.Passes())
	}
	if r.Overall != want.Figures() || r.Errors != 0 || r.Judge != "openai/scripted-judge" {
		t.Errorf("report %+v (errors %d, judge %s), want %+v", r.Overall, r.Errors, r.Judge, want.Figures())
	}
	if r.Overall.Unknown == 0 || r.Overall.FalsePass.Count == 0 {
		t.Errorf("the rule should give unknowns and false passes on the set: %+v", r.Overall)
	}
	if len(srv.Requests()) != len(cases) {
		t.Errorf("%d requests, want one per case (%d)", len(srv.Requests()), len(cases))
	}
}
