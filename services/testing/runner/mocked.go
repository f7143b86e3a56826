package runner

import (
	"context"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// mocksTools reports whether an llm test answers the agent's tool calls
// from its mocks (tool_mock_config or tool_mock_overrides, as a test
// made from a production conversation has): its agent turn then runs to
// the reply the user hears, not just to the first tool call.
func mocksTools(r Run) bool {
	def := r.Definition
	return r.Test.GetTestType() == domain.TypeLLM && (def.ToolMockConfig != nil || len(def.ToolMockOverrides) > 0)
}

// playMocked plays the agent's next turn of an llm test with mocked
// tools: each call is answered as a simulation answers it (agentTurn),
// and the last thing the agent said is judged. The agent responses are
// every message of the turn, tool calls and their results included, so a
// reader sees which result the agent was given.
func (e *Executor) playMocked(ctx context.Context, m Model, r Run, usage *Usage) (Verdict, []Vote, []byte, error) {
	conv, cfg := e.conversation(r)
	start := len(conv.Turns)
	transcript := func() []byte { return simulationTranscript(r, conv.Turns[start:], m.ModelName()) }
	if err := e.agentTurn(ctx, m, &conv, newMocker(r.Definition, cfg.Tools), usage); err != nil {
		return Verdict{}, nil, transcript(), err
	}
	in := judgeInput(r.Definition)
	in.Transcript = conv.Turns
	for i := len(conv.Turns) - 1; i >= start; i-- {
		if t := conv.Turns[i]; t.Role == "agent" {
			in.Reply = t
			if t.Text != "" {
				break
			}
		}
	}
	v, votes, err := e.judge(ctx, m, in, usage)
	return v, votes, transcript(), err
}
