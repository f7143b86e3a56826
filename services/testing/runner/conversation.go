package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// Criterion is one evaluation criterion of a simulated conversation
// (public PromptEvaluationCriteria): its goal is judged on its own.
type Criterion struct {
	ID, Name, Goal string
}

// CriterionResult is the judge's verdict on one criterion.
type CriterionResult struct {
	ID        string `json:"criteria_id"`
	Result    string `json:"result"` // success | failure | unknown
	Rationale string `json:"rationale"`
}

// ConversationResult is a simulated conversation and its analysis.
type ConversationResult struct {
	Transcript json.RawMessage // public transcript messages
	Criteria   []CriterionResult
	Summary    string
	// Error is why the conversation could not be played to its end (an
	// endpoint down, the time limit); the transcript holds what was.
	Error string
	// Agent and Judge are the models that played the agent and judged
	// (and played the user), and what they did.
	Agent, Judge ModelUse
	TurnMs       []int64 // each agent turn's response time
	FirstTokenMs []int64 // each agent turn's time to first token
}

// ModelUse is a model and what it did.
type ModelUse struct {
	Provider, Model string
	Usage
}

// SimulateConversation plays r (a simulation) as a simulation test does,
// opening, when given, being the user's first message, then judges each
// criterion on its own against the whole conversation: the same engine,
// one verdict per criterion.
func (e *Executor) SimulateConversation(ctx context.Context, r Run, opening string, criteria []Criterion) (out ConversationResult) {
	limit := e.timeLimit()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	out = e.emptyConversationResult()
	m, err := e.cast(ctx, r, 0)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	out.Agent = ModelUse{Provider: m.agent.Provider(), Model: m.agent.ModelName()}
	var usage Usage
	defer func() { // however it ends (out is the named result), say what each model did
		agentUsage, turns := m.record()
		usage.Sub(agentUsage)
		out.Agent.Usage, out.Judge.Usage = agentUsage, usage
		for _, t := range turns {
			out.TurnMs = append(out.TurnMs, t.Response.Milliseconds())
			out.FirstTokenMs = append(out.FirstTokenMs, t.FirstToken.Milliseconds())
		}
	}()
	sim, err := e.playSimulation(ctx, m, r, opening, &usage)
	out.Transcript = simulationTranscript(r, sim.conv.Turns[sim.start:], m.ModelName())
	if err != nil {
		out.Error = failure(err, limit)
		return out
	}
	out.Summary = sim.how(r)
	if err := e.judgeCriteria(ctx, m, sim, criteria, &usage, &out); err != nil {
		out.Error = failure(err, limit)
	}
	return out
}

// emptyConversationResult is what a conversation's result says before
// anything is played or judged: an empty transcript, no criteria, and
// the judge.
func (e *Executor) emptyConversationResult() ConversationResult {
	return ConversationResult{Transcript: json.RawMessage("[]"), Criteria: []CriterionResult{},
		Judge: ModelUse{Provider: e.Model.Provider(), Model: e.Model.ModelName()}}
}

// failure says why a run stopped, as a run's error does.
func failure(err error, limit time.Duration) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("The run exceeded its time limit of %s.", limit)
	case IsEndpointError(err):
		return err.Error()
	}
	return "The model failed: " + err.Error()
}

// CallSuccessful is the analysis' call_successful: success when every
// criterion succeeded, failure when one failed, else unknown (none, or a
// verdict missing).
func CallSuccessful(results []CriterionResult) string {
	if len(results) == 0 {
		return domain.ConditionUnknown
	}
	out := domain.ConditionSuccess
	for _, r := range results {
		switch r.Result {
		case domain.ConditionFailure:
			return domain.ConditionFailure
		case domain.ConditionSuccess:
		default:
			out = domain.ConditionUnknown
		}
	}
	return out
}

// JudgeRecorded judges each criterion on its own against a recorded
// conversation (r's chat history, as it happened: nothing is played),
// with the judge model as a simulation's criteria are judged.
func (e *Executor) JudgeRecorded(ctx context.Context, r Run, criteria []Criterion) (out ConversationResult) {
	limit := e.timeLimit()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	out = e.emptyConversationResult()
	var usage Usage
	defer func() { out.Judge.Usage = usage }()
	conv, _ := e.conversation(r)
	sim := simulation{conv: conv}
	agentTurns := 0
	for _, t := range conv.Turns {
		if t.Role == "agent" {
			agentTurns++
		}
	}
	out.Summary = fmt.Sprintf("The recorded conversation: %d turn(s), %d of them the agent's; judged again by %s.", len(conv.Turns), agentTurns, e.Model.ModelName())
	if err := e.judgeCriteria(ctx, e.Model, sim, criteria, &usage, &out); err != nil {
		out.Error = failure(err, limit)
	}
	return out
}

// judgeCriteria judges each criterion on its own against the
// conversation sim holds, with m, adding each verdict to out's criteria;
// it stops at the first that cannot be judged.
func (e *Executor) judgeCriteria(ctx context.Context, m Model, sim simulation, criteria []Criterion, usage *Usage, out *ConversationResult) error {
	for _, c := range criteria {
		v, votes, err := e.judge(ctx, m, sim.judgeInput(JudgeInput{Conditions: []string{c.Goal}}), usage)
		if err != nil {
			return err
		}
		rationale := v.Summary
		if note := votesNote(votes); note != "" {
			rationale += note
		}
		out.Criteria = append(out.Criteria, CriterionResult{ID: c.ID, Result: v.Result, Rationale: rationale})
	}
	return nil
}
