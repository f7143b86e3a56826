package runner

import (
	"context"
	"errors"
	"sync"
	"time"
)

// AgentModel plays an agent's turns: the platform's model under the
// agent's llm, or the agent's own endpoint (custom-llm).
type AgentModel interface {
	Provider() string
	ModelName() string
	Respond(ctx context.Context, c Conversation) (Turn, Usage, error)
}

// AgentModels picks the model that plays a run's agent from its
// configuration. An error fails the run with its message (a secret that
// is gone, an endpoint refused).
type AgentModels interface {
	For(ctx context.Context, workspaceID string, cfg AgentConfig, vars map[string]string) (AgentModel, error)
}

// EndpointError is a failure to reach an agent's own endpoint, or one it
// answered with an error: the run fails with it as it is, not as a
// failure of the platform's model.
type EndpointError struct {
	Err error
	// Stream: the endpoint began its answer and its stream went wrong
	// (Err says how: no [DONE], stalled, too large, malformed, an error
	// event, cut).
	Stream bool
}

func (e *EndpointError) Error() string {
	if e.Stream {
		return "agent endpoint stream: " + e.Err.Error()
	}
	return "agent endpoint unreachable: " + e.Err.Error()
}
func (e *EndpointError) Unwrap() error { return e.Err }

// IsEndpointError reports whether err is (or wraps) an EndpointError.
func IsEndpointError(err error) bool {
	var e *EndpointError
	return errors.As(err, &e)
}

// TurnTiming is how long the agent took to answer one of its turns, and
// to begin it: its first token (what a caller waits before the agent
// speaks). An answer read whole begins when it ends.
type TurnTiming struct {
	Response   time.Duration
	FirstToken time.Duration
}

// firstTokenKey holds, in a turn's context, when the turn's first token
// came (a *time.Time the model sets; zero: it came with the end).
type firstTokenKey struct{}

// markFirstToken records at as the first token of the turn ctx belongs to.
func markFirstToken(ctx context.Context, at time.Time) {
	if p, ok := ctx.Value(firstTokenKey{}).(*time.Time); ok && p.IsZero() {
		*p = at
	}
}

// waitedKey holds, in a turn's context, how long the turn waited on this
// side (for a slot of a busy endpoint): not the agent's response time.
type waitedKey struct{}

// addWaited counts d as waiting of the turn ctx belongs to.
func addWaited(ctx context.Context, d time.Duration) {
	if w, ok := ctx.Value(waitedKey{}).(*time.Duration); ok {
		*w += d
	}
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
	var waited time.Duration
	var firstAt time.Time
	turnCtx := context.WithValue(context.WithValue(ctx, waitedKey{}, &waited), firstTokenKey{}, &firstAt)
	start := time.Now() // a measurement, not the executor's clock
	t, u, err := r.agent.Respond(turnCtx, c)
	took := time.Since(start) - waited
	first := took
	if !firstAt.IsZero() { // the wait for a slot comes before the request
		first = min(max(firstAt.Sub(start)-waited, 0), took)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.agentUsage.Add(u)
	if err == nil && u.Cached == 0 { // a cached answer says nothing of the agent's speed
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
