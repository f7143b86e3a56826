package runner

import (
	"context"
	"errors"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// ErrNotJudged is a run whose verdict no judge gives: a tool test's calls
// are checked against its expectation, not judged.
var ErrNotJudged = errors.New("a tool test is checked by its tool calls, not by a judge: it cannot be judged again")

// Rejudge judges a run's recorded reply again with m: the test's success
// conditions against the conversation the run had (its chat history, then
// the agent's responses as recorded). Nothing is played again; a model
// judge's failure is re-asked as for a run (Judge votes).
func (e *Executor) Rejudge(ctx context.Context, m Model, r Run, responses []domain.Message) (Verdict, Usage, error) {
	var usage Usage
	if r.Test.GetTestType() == domain.TypeTool {
		return Verdict{}, usage, ErrNotJudged
	}
	limit := e.timeLimit()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	recorded := r
	recorded.Definition.ChatHistory = append(append([]domain.Message{}, r.Definition.ChatHistory...), responses...)
	conv, _ := e.conversation(recorded)
	in := judgeInput(r.Definition)
	if r.Test.GetTestType() == domain.TypeSimulation {
		in = simulation{conv: conv}.judgeInput(in)
	} else {
		reply := len(conv.Turns) - 1
		for reply >= 0 && conv.Turns[reply].Role != "agent" {
			reply--
		}
		if reply < 0 {
			return Verdict{Result: domain.ConditionUnknown, Summary: "The run recorded no reply to judge."}, usage, nil
		}
		in.Transcript, in.Reply = conv.Turns[:reply], conv.Turns[reply]
	}
	v, _, err := e.judge(ctx, m, in, &usage)
	return v, usage, err
}
