package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/llm/llmtest"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
	"github.com/voiceai-platform/voiceai/services/testing/offline"
)

const hoursReply = "We are open nine to five every weekday."

// judgeCalls counts the judge requests a server received.
func judgeCalls(srv *llmtest.Server) int {
	n := 0
	for _, r := range srv.Requests() {
		if llmtest.IsJudge(r) {
			n++
		}
	}
	return n
}

// A failure is judged again and the majority decides; the votes are
// recorded. Asking stops once a result has a majority.
func TestFlakyJudgeMajority(t *testing.T) {
	fail, pass := llmtest.Verdict("failure", "no hours given"), llmtest.Verdict("success", "gives the hours")
	cases := []struct {
		name      string
		verdicts  []llmtest.Reply
		votes     int
		status    string
		summary   string
		voteLines string
	}{
		{"failure outvoted", []llmtest.Reply{fail, pass, pass}, 3, domain.RunPassed, "gives the hours",
			"failure:no hours given|success:gives the hours|success:gives the hours"},
		{"failure confirmed", []llmtest.Reply{fail, fail, pass}, 2, domain.RunFailed, "no hours given",
			"failure:no hours given|failure:no hours given"},
		{"success stands alone", []llmtest.Reply{pass, fail, fail}, 1, domain.RunPassed, "gives the hours", ""},
		// unknown is no verdict, not a failure: not judged again.
		{"unknown is not re-judged", []llmtest.Reply{llmtest.OK("not json"), pass, pass}, 1, domain.RunFailed, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, srv := newOpenAI(t, llmtest.AgentAndJudge(llmtest.Fixed(0, hoursReply), llmtest.Sequence(c.verdicts...)), nil)
			res := (&Executor{Now: time.Now, Model: m, JudgeVotes: 3}).Execute(context.Background(), newRun(t, domain.TypeLLM, hoursTest))
			if n := judgeCalls(srv); n != c.votes {
				t.Fatalf("%d judge calls, want %d", n, c.votes)
			}
			if res.GetStatus() != c.status || (c.summary != "" && res.GetRationaleSummary() != c.summary) {
				t.Fatalf("status %s summary %q", res.GetStatus(), res.GetRationaleSummary())
			}
			var lines []string
			for _, v := range res.GetJudgeVotes() {
				lines = append(lines, v.GetResult()+":"+v.GetSummary())
			}
			if got := strings.Join(lines, "|"); got != c.voteLines {
				t.Fatalf("votes %q, want %q", got, c.voteLines)
			}
			if judged, played := res.GetUsage().GetModelCalls(), res.GetAgentUsage().GetModelCalls(); int(judged) != c.votes || played != 1 {
				t.Fatalf("model_calls: judge %d, agent %d", judged, played)
			}
		})
	}
}

// JudgeVotes 1 turns re-judging off; a deterministic model (offline)
// takes one vote whatever JudgeVotes says.
func TestOneVoteWhenDisabledOrDeterministic(t *testing.T) {
	m, srv := newOpenAI(t, llmtest.AgentAndJudge(llmtest.Fixed(0, hoursReply),
		llmtest.Sequence(llmtest.Verdict("failure", "no"), llmtest.Verdict("success", "yes"))), nil)
	res := (&Executor{Now: time.Now, Model: m, JudgeVotes: 1}).Execute(context.Background(), newRun(t, domain.TypeLLM, hoursTest))
	if res.GetStatus() != domain.RunFailed || judgeCalls(srv) != 1 || len(res.GetJudgeVotes()) != 0 {
		t.Fatalf("status %s, %d judge calls, votes %v", res.GetStatus(), judgeCalls(srv), res.GetJudgeVotes())
	}

	// The offline model plays both roles and fails this test.
	offline := deterministic{&scripted{}}
	res = (&Executor{Now: time.Now, Model: offline, JudgeVotes: 3}).Execute(context.Background(), newRun(t, domain.TypeLLM,
		`{"type":"llm","name":"n","chat_history":[{"role":"user","message":"Do you sell shoes?","time_in_call_secs":1}],"success_condition":"sells shoes"}`))
	if res.GetStatus() != domain.RunFailed || len(offline.judgements) != 1 || len(res.GetJudgeVotes()) != 0 {
		t.Fatalf("deterministic: status %s, judged %d times, votes %v", res.GetStatus(), len(offline.judgements), res.GetJudgeVotes())
	}
}

// deterministic is a scripted model that says it is deterministic, as
// Offline does.
type deterministic struct{ *scripted }

func (deterministic) Deterministic() bool { return offline.Model{}.Deterministic() }

// Without a majority (failure, unknown, success) there is no verdict.
func TestJudgeWithoutMajorityIsUnknown(t *testing.T) {
	m, _ := newOpenAI(t, llmtest.AgentAndJudge(llmtest.Fixed(0, hoursReply),
		llmtest.Sequence(llmtest.Verdict("failure", "no"), llmtest.OK("?"), llmtest.Verdict("success", "yes"))), nil)
	res := (&Executor{Now: time.Now, Model: m, JudgeVotes: 3}).Execute(context.Background(), newRun(t, domain.TypeLLM, hoursTest))
	if res.GetStatus() != domain.RunFailed || res.GetConditionResult() != domain.ConditionUnknown || len(res.GetJudgeVotes()) != 3 ||
		res.GetRationaleSummary() != "The judge's verdicts had no majority (judge votes: failure, unknown, success)." {
		t.Fatalf("status %s result %s summary %q votes %v", res.GetStatus(), res.GetConditionResult(), res.GetRationaleSummary(), res.GetJudgeVotes())
	}
}

// A tool test's llm parameter check is re-judged too; its rationale says
// how the votes went.
func TestToolParameterJudgeIsReJudged(t *testing.T) {
	m, srv := newOpenAI(t, llmtest.AgentAndJudge(llmtest.Sequence(llmtest.ToolCall("book_table", `{"guests":4,"date":"friday"}`)),
		llmtest.Sequence(llmtest.Verdict("failure", "not a weekday"), llmtest.Verdict("success", "a weekday"), llmtest.Verdict("success", "a weekday"))), nil)
	res := (&Executor{Now: time.Now, Model: m, JudgeVotes: 3}).Execute(context.Background(), newRun(t, domain.TypeTool,
		toolTest(`{"path":"date","eval":{"type":"llm","description":"a weekday"}}`, "")))
	msgs := strings.Join(res.GetRationaleMessages(), "\n")
	if res.GetStatus() != domain.RunPassed || judgeCalls(srv) != 3 || !strings.Contains(msgs, "(judge votes: failure, success, success)") {
		t.Fatalf("status %s, %d judge calls, %q", res.GetStatus(), judgeCalls(srv), msgs)
	}
}
