package runner

import (
	"context"
	"sync"
	"time"

	"github.com/voiceai-platform/voiceai/services/testing/model"
)

// TurnTiming is how long the agent took to answer one of its turns, and
// to begin it: its first token (what a caller waits before the agent
// speaks). An answer read whole begins when it ends.
type TurnTiming struct {
	Response   time.Duration
	FirstToken time.Duration
}

// roles is the Model a run uses: the agent's model plays its turns, the
// judge model plays the simulated user and judges. It times every agent
// turn and keeps the agent's usage apart.
type roles struct {
	agent AgentModel
	judge Model

	mu         sync.Mutex
	agentUsage Usage
	turns      []TurnTiming
}

func (r *roles) Provider() string  { return r.agent.Provider() }
func (r *roles) ModelName() string { return r.agent.ModelName() } // what produced the agent's turns

func (r *roles) Respond(ctx context.Context, c Conversation) (Turn, Usage, error) {
	turnCtx, clock := model.WithTurnClock(ctx)
	start := time.Now() // a measurement, not the executor's clock
	t, u, err := r.agent.Respond(turnCtx, c)
	took := time.Since(start) - clock.Waited
	first := took
	if !clock.FirstToken.IsZero() { // the wait for a slot comes before the request
		first = min(max(clock.FirstToken.Sub(start)-clock.Waited, 0), took)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.agentUsage.Add(u)
	// A cached answer says nothing of the agent's speed; an empty one came
	// with no first token, which its time would claim.
	if err == nil && u.Cached == 0 && !t.Empty() {
		r.turns = append(r.turns, TurnTiming{Response: took, FirstToken: first})
	}
	return t, u, err
}

func (r *roles) SimulateUser(ctx context.Context, in UserInput) (UserTurn, Usage, error) {
	return r.judge.SimulateUser(ctx, in)
}

func (r *roles) Judge(ctx context.Context, in JudgeInput) (Verdict, Usage, error) {
	return r.judge.Judge(ctx, in)
}

// Deterministic is the judge's: it decides whether re-judging helps.
func (r *roles) Deterministic() bool {
	d, ok := r.judge.(Deterministic)
	return ok && d.Deterministic()
}

func (r *roles) record() (Usage, []TurnTiming) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.agentUsage, append([]TurnTiming(nil), r.turns...)
}
