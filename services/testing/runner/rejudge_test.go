package runner

import (
	"context"
	"errors"
	"testing"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

func msg(role, text string) domain.Message { return domain.Message{Role: role, Message: &text} }

// A recorded reply is judged again as it was: the test's conditions, the
// chat history as the transcript and the agent's last recorded turn as
// the reply; nothing is played. A tool test is not a judge's to decide.
func TestRejudgeJudgesTheRecordedReply(t *testing.T) {
	judge := &scripted{judge: func(context.Context, JudgeInput) (Verdict, Usage, error) {
		return Verdict{Result: domain.ConditionSuccess, Summary: "fine"}, Usage{Calls: 1}, nil
	}}
	e := &Executor{Model: judge}
	cond := "The agent states the opening hours"
	r := Run{Invocation: &testingv1.Invocation{InvocationId: "tinv_1", WorkspaceId: "ws"},
		Test:       &testingv1.PlannedTest{TestId: "test_1", TestType: domain.TypeLLM},
		Definition: domain.TestInput{SuccessCondition: &cond, ChatHistory: []domain.Message{msg("user", "When are you open?")}}}
	v, u, err := e.Rejudge(context.Background(), judge, r, []domain.Message{msg("agent", "Nine to five.")})
	if err != nil || v.Result != domain.ConditionSuccess || u.Calls != 1 {
		t.Fatalf("verdict %+v usage %+v err %v", v, u, err)
	}
	if len(judge.convs) != 0 {
		t.Fatalf("the agent was played again: %+v", judge.convs)
	}
	in := judge.judgements[0]
	if len(in.Conditions) != 1 || in.Conditions[0] != cond || in.Reply.Text != "Nine to five." || in.Simulation ||
		len(in.Transcript) != 1 || in.Transcript[0].Text != "When are you open?" {
		t.Fatalf("judge input %+v", in)
	}

	// A simulation's whole recorded conversation is judged.
	r.Test.TestType, r.Definition.ChatHistory = domain.TypeSimulation, nil
	if _, _, err := e.Rejudge(context.Background(), judge, r, []domain.Message{msg("agent", "Hello."), msg("user", "Hours?"), msg("agent", "Nine to five.")}); err != nil {
		t.Fatal(err)
	}
	if in := judge.judgements[1]; !in.Simulation || len(in.Transcript) != 3 || in.Reply.Text != "Nine to five." {
		t.Fatalf("simulation judge input %+v", in)
	}

	// No agent turn recorded: nothing to judge.
	r.Test.TestType = domain.TypeLLM
	if v, _, err := e.Rejudge(context.Background(), judge, r, nil); err != nil || v.Result != domain.ConditionUnknown {
		t.Fatalf("no reply: %+v %v", v, err)
	}
	r.Test.TestType = domain.TypeTool
	if _, _, err := e.Rejudge(context.Background(), judge, r, nil); !errors.Is(err, ErrNotJudged) {
		t.Fatalf("a tool test: %v", err)
	}
}
