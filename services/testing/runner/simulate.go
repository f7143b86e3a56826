package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
	"github.com/voiceai-platform/voiceai/services/testing/model"
)

// maxToolCallsPerTurn bounds the tool calls the agent makes in one turn
// of a simulation: once it has made that many, its turn ends with their
// results and the user speaks.
const maxToolCallsPerTurn = 5

// simulate plays a simulation test: from the chat history (or the
// agent's first message), the simulated user and the agent alternate, at
// most simulation_max_turns agent turns, until the user is done. Tool
// calls are answered from the test's mocks (mocker). The whole
// conversation is then judged once against every success condition. It
// returns the verdict and the simulated conversation as transcript
// messages (the turns the simulation added, in order, tool calls and
// results included), which it returns also when a model call fails.
func (e *Executor) simulate(ctx context.Context, m Model, r Run, usage *Usage) (Verdict, []Vote, []byte, error) {
	sim, err := e.playSimulation(ctx, m, r, "", usage)
	transcript := simulationTranscript(r, sim.conv.Turns[sim.start:], m.ModelName())
	if err != nil {
		return Verdict{}, nil, transcript, err
	}
	v, votes, err := e.judge(ctx, m, sim.judgeInput(judgeInput(r.Definition)), usage)
	if err != nil {
		return Verdict{}, nil, transcript, err
	}
	v.Messages = append([]string{sim.how(r)}, v.Messages...)
	return v, votes, transcript, nil
}

// simulation is a played simulated conversation.
type simulation struct {
	conv       Conversation
	start      int // the first turn the simulation added (or the agent's first message)
	agentTurns int
	ended      bool // the simulated user ended it (else the turn limit did)
}

// how says how the simulation ended.
func (s simulation) how(r Run) string {
	if s.ended {
		return fmt.Sprintf("Simulation: %d agent turn(s); the simulated user ended the conversation.", s.agentTurns)
	}
	return fmt.Sprintf("Simulation: %d agent turn(s); simulation_max_turns (%d) reached before the simulated user was done.", s.agentTurns, r.Definition.MaxTurns())
}

// judgeInput is in with the whole conversation under test, the agent's
// last turn with words as the reply.
func (s simulation) judgeInput(in JudgeInput) JudgeInput {
	in.Transcript, in.Simulation = s.conv.Turns, true
	for i := len(s.conv.Turns) - 1; i >= 0; i-- {
		if t := s.conv.Turns[i]; t.Role == "agent" {
			in.Reply = t
			if t.Text != "" {
				break
			}
		}
	}
	return in
}

// playSimulation plays the conversation of a simulation: opening, when
// given, is the user's first message (else the simulated user says it).
// It returns what was played also when a model call fails.
func (e *Executor) playSimulation(ctx context.Context, m Model, r Run, opening string, usage *Usage) (simulation, error) {
	conv, cfg := e.conversation(r)
	sim := simulation{start: len(conv.Turns)} // the turns before the simulation
	if len(r.Definition.ChatHistory) == 0 {
		sim.start = 0 // the agent's first message opens the simulated conversation
	}
	mocks := newMocker(r.Definition, cfg.Tools)
	scenario := deref(r.Definition.SimulationScenario)
	maxTurns := r.Definition.MaxTurns()
	defer func() { sim.conv = conv }()
	for {
		if err := ctx.Err(); err != nil {
			sim.conv = conv
			return sim, err
		}
		if n := len(conv.Turns); n == 0 || conv.Turns[n-1].Role != "user" {
			if sim.agentTurns >= maxTurns {
				break
			}
			ut := UserTurn{Text: opening}
			if opening == "" {
				var u Usage
				var err error
				ut, u, err = m.SimulateUser(ctx, UserInput{Scenario: scenario, Transcript: conv.Turns})
				usage.Add(u)
				if err != nil {
					sim.conv = conv
					return sim, err
				}
			}
			opening = ""
			if ut.Text != "" {
				conv.Turns = append(conv.Turns, Turn{Role: "user", Text: ut.Text})
			}
			if ut.Done || ut.Text == "" { // a user with nothing to say is done
				sim.ended = true
				break
			}
		}
		if err := e.agentTurn(ctx, m, &conv, mocks, usage); err != nil {
			sim.conv = conv
			return sim, err
		}
		sim.agentTurns++
	}
	sim.conv = conv
	return sim, nil
}

// agentTurn plays one agent turn: its reply, and while it calls tools
// (at most maxToolCallsPerTurn), their mocked results and its next reply.
func (e *Executor) agentTurn(ctx context.Context, m Model, conv *Conversation, mocks mocker, usage *Usage) error {
	for calls := 0; ; {
		reply, u, err := m.Respond(ctx, *conv)
		usage.Add(u)
		if err != nil {
			return err
		}
		reply.Role = "agent"
		conv.Turns = append(conv.Turns, reply)
		if len(reply.Calls) == 0 {
			return nil
		}
		for _, c := range reply.Calls {
			result, isErr := mocks.answer(c)
			conv.Turns = append(conv.Turns, Turn{Role: "tool", Text: result, ToolCallID: c.ID, ToolName: c.Name, IsError: isErr})
		}
		if calls += len(reply.Calls); calls >= maxToolCallsPerTurn {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// mocker answers the agent's tool calls in a simulation from the test's
// tool_mock_config and tool_mock_overrides. A tool is named by its id or
// its name (the agent's configuration may give a tool both; its calls
// carry the name), and either names it in mocked_tool_ids and
// tool_mock_overrides, the id first.
type mocker struct {
	strategy, fallback string
	selected           map[string]bool
	overrides          map[string][]domain.ToolMock
	ids                map[string]string // tool name → id
}

func newMocker(def domain.TestInput, tools []Tool) mocker {
	m := mocker{strategy: domain.MockAll, fallback: domain.FallbackRaiseError, selected: map[string]bool{},
		overrides: def.ToolMockOverrides, ids: map[string]string{}}
	if c := def.ToolMockConfig; c != nil {
		if c.MockingStrategy != nil {
			m.strategy = *c.MockingStrategy
		}
		if c.FallbackStrategy != nil {
			m.fallback = *c.FallbackStrategy
		}
		for _, id := range c.MockedToolIDs {
			m.selected[id] = true
		}
	}
	for _, t := range tools {
		if t.ID != "" {
			m.ids[t.Name] = t.ID
		}
	}
	return m
}

// answer is a call's result: the first mock of the tool whose parameter
// conditions the call's arguments meet, when the tool is mocked; else the
// fallback, an error (a runner cannot call a real tool).
func (m mocker) answer(c Call) (result string, isError bool) {
	keys := []string{c.Name}
	if id := m.ids[c.Name]; id != "" && id != c.Name {
		keys = []string{id, c.Name}
	}
	mocked := m.strategy == domain.MockAll
	if m.strategy == domain.MockSelected {
		mocked = slices.ContainsFunc(keys, func(k string) bool { return m.selected[k] })
	}
	why := fmt.Sprintf("tool '%s' is not mocked in this test", c.Name)
	if mocked {
		for _, k := range keys {
			for _, mock := range m.overrides[k] {
				if mockMatches(mock.ParameterConditions, c.Arguments) {
					return deref(mock.MockResult), mock.IsError
				}
			}
		}
		why = fmt.Sprintf("no mock matched for tool '%s'", c.Name)
	}
	if m.fallback == domain.FallbackCallRealTool {
		return fmt.Sprintf("Error: %s, and the real tool cannot be called from a test run (the runner has no network tools).", why), true
	}
	return "Error: " + why + ".", true
}

// mockMatches reports whether a call's JSON arguments meet every
// parameter condition (none: any call): "anything" needs the path
// present, "exact" its value as written, "regex" its value matching the
// pattern; an "llm" condition needs the path present and is otherwise
// taken as met (the runner does not ask a model about mocks).
func mockMatches(conds []domain.ToolParam, arguments string) bool {
	if len(conds) == 0 {
		return true
	}
	var args map[string]any
	if json.Unmarshal([]byte(arguments), &args) != nil {
		return false
	}
	for _, p := range conds {
		val, present := lookup(args, deref(p.Path))
		if !present || p.Eval == nil {
			return false
		}
		got := model.ScalarString(val)
		switch p.Eval.Type {
		case "exact":
			if got != deref(p.Eval.ExpectedValue) {
				return false
			}
		case "regex":
			re, err := regexp.Compile(deref(p.Eval.Pattern))
			if err != nil || !re.MatchString(got) {
				return false
			}
		}
	}
	return true
}

// simulationTranscript renders a simulated conversation as transcript
// messages: user and agent turns in order, the results of an agent turn's
// tool calls as one agent message carrying tool_results, one second of
// call time apart after the chat history.
func simulationTranscript(r Run, turns []Turn, model string) []byte {
	at := int64(historyEnd(r))
	out := make([]messageJSON, 0, len(turns))
	for _, t := range turns {
		if t.Role == "tool" {
			res := toolResultJSON{RequestID: t.ToolCallID, ToolName: t.ToolName, ResultValue: t.Text, IsError: t.IsError,
				ToolHasBeenCalled: true, Type: "system"}
			if n := len(out); n > 0 && len(out[n-1].ToolResults) > 0 {
				out[n-1].ToolResults = append(out[n-1].ToolResults, res)
				continue
			}
			at++
			m := agentTurnMessage(r, Turn{}, at, model)
			m.ToolResults = []toolResultJSON{res}
			out = append(out, m)
			continue
		}
		at++
		if t.Role == "user" {
			out = append(out, messageJSON{Role: "user", Message: t.Text, TimeInCallSecs: at, ToolCalls: []toolCallJSON{}, SourceMedium: "text"})
			continue
		}
		out = append(out, agentTurnMessage(r, t, at, model))
	}
	return domain.TranscriptJSON(out)
}
