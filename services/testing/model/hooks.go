package model

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// What a run tells the model clients, and they tell it back, travels in
// the context of each call: the clients never see the runner's state.
//
//   - Slot: a run holds one of its worker's slots while it runs; while a
//     client waits on something outside the worker (an agent endpoint's
//     slot) it gives the slot back (ReleaseSlot).
//   - Turn timing: a client says when a streamed turn's first token came
//     (MarkFirstToken) and how long the turn waited on this side
//     (AddWaited), which is not the agent's response time.
//   - Wire time: the time a turn's requests were on the wire (a load
//     test's measure of the platform's own time in a turn).
//   - Endpoint limit: a load test's calls share a concurrency of their
//     own on the agent's endpoint, never its usual slots.
//   - Gate: a run queued on a busy endpoint has not started; once it has
//     a slot, it asks its gate whether it is still wanted (its invocation
//     may have been cancelled meanwhile) before its first call.

type slotKey struct{}

// WithSlot is ctx for a run whose slot pause gives back; pause returns
// the function that takes it again.
func WithSlot(ctx context.Context, pause func() (resume func())) context.Context {
	return context.WithValue(ctx, slotKey{}, pause)
}

// WithoutSlot is ctx whose calls keep their slot while they wait.
func WithoutSlot(ctx context.Context) context.Context {
	return context.WithValue(ctx, slotKey{}, nil)
}

// ReleaseSlot gives back the run's slot while it waits; call resume once
// it runs again. Outside a worker it does nothing.
func ReleaseSlot(ctx context.Context) (resume func()) {
	if pause, ok := ctx.Value(slotKey{}).(func() func()); ok && pause != nil {
		return pause()
	}
	return func() {}
}

// TurnClock is what the clients report of one agent turn.
type TurnClock struct {
	// FirstToken is when the turn's first token came (zero: it came with
	// the end).
	FirstToken time.Time
	// Waited is how long the turn waited on this side (for a slot of a
	// busy endpoint).
	Waited time.Duration
}

type turnClockKey struct{}

// WithTurnClock is ctx for one agent turn, and the clock its client reports to.
func WithTurnClock(ctx context.Context) (context.Context, *TurnClock) {
	c := &TurnClock{}
	return context.WithValue(ctx, turnClockKey{}, c), c
}

// MarkFirstToken records at as the first token of the turn ctx belongs to.
func MarkFirstToken(ctx context.Context, at time.Time) {
	if c, ok := ctx.Value(turnClockKey{}).(*TurnClock); ok && c.FirstToken.IsZero() {
		c.FirstToken = at
	}
}

// AddWaited counts d as waiting of the turn ctx belongs to.
func AddWaited(ctx context.Context, d time.Duration) {
	if c, ok := ctx.Value(turnClockKey{}).(*TurnClock); ok {
		c.Waited += d
	}
}

// WireClock adds up the time a turn's requests to the endpoint were on
// the wire: from sending each to the end of its answer's body.
type WireClock struct {
	mu  sync.Mutex
	sum time.Duration
	n   int
}

type wireClockKey struct{}

// WithWireClock is ctx whose requests are timed on the returned clock.
func WithWireClock(ctx context.Context) (context.Context, *WireClock) {
	c := &WireClock{}
	return context.WithValue(ctx, wireClockKey{}, c), c
}

// WireClockOf is the clock of ctx's requests, if any.
func WireClockOf(ctx context.Context) (*WireClock, bool) {
	c, ok := ctx.Value(wireClockKey{}).(*WireClock)
	return c, ok
}

// Add counts one request's time.
func (c *WireClock) Add(d time.Duration) {
	c.mu.Lock()
	c.sum += d
	c.n++
	c.mu.Unlock()
}

// Total is the time counted; ok is false when no request was.
func (c *WireClock) Total() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sum, c.n > 0
}

// EndpointLimit is a load test's concurrency on the agent's endpoint.
type EndpointLimit struct {
	Scope string // the load test: its calls share one limit per runner
	N     int
}

type endpointLimitKey struct{}

// WithEndpointLimit is ctx whose endpoint calls share limit.
func WithEndpointLimit(ctx context.Context, limit EndpointLimit) context.Context {
	return context.WithValue(ctx, endpointLimitKey{}, limit)
}

// EndpointLimitOf is ctx's endpoint limit, if it has one above 0.
func EndpointLimitOf(ctx context.Context) (EndpointLimit, bool) {
	l, ok := ctx.Value(endpointLimitKey{}).(EndpointLimit)
	return l, ok && l.N > 0
}

// Gate is a run's word on whether it is still wanted, asked by a client
// that waited for an agent endpoint's slot before the run's first call:
// a run queued there has not started, so a cancel meanwhile stops it, as
// it stops the runs not yet taken from the queue. A run that has called
// its endpoint once is in progress, and finishes.
type Gate struct {
	// Wanted reports whether the run is still wanted.
	Wanted func() bool

	started, dropped atomic.Bool
}

type gateKey struct{}

// WithGate is ctx for a run asked through g.
func WithGate(ctx context.Context, g *Gate) context.Context {
	return context.WithValue(ctx, gateKey{}, g)
}

// ErrNotWanted ends a run dropped at its gate.
var ErrNotWanted = errors.New("the run's invocation was cancelled while the run waited for the agent's endpoint")

// Proceed is asked by a client holding an endpoint slot before it calls
// the endpoint (waited: it had to wait for the slot). False: the run was
// not yet started and is no longer wanted (Dropped from now on); the
// client calls nothing and answers ErrNotWanted.
func Proceed(ctx context.Context, waited bool) bool {
	g, _ := ctx.Value(gateKey{}).(*Gate)
	if g == nil || g.started.Load() {
		return true
	}
	if waited && g.Wanted != nil && !g.Wanted() {
		g.dropped.Store(true)
		return false
	}
	g.started.Store(true)
	return true
}

// StillWanted asks ctx's gate whether its run is still wanted (true
// without a gate): a client asks it before calling the endpoint again
// for a retry, which a cancelled run's answer is not worth.
func StillWanted(ctx context.Context) bool {
	g, _ := ctx.Value(gateKey{}).(*Gate)
	return g == nil || g.Wanted == nil || g.Wanted()
}

// Dropped reports whether the run was stopped at its gate.
func (g *Gate) Dropped() bool { return g.dropped.Load() }
