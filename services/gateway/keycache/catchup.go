package keycache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/eventstore"
)

// CatchUp lets the gateway wait, before refusing an unknown key, until
// the cache holds every key event stored before the request arrived: a
// key created a moment ago (through this gateway or another) must not be
// refused for the milliseconds its event takes to reach the feed.
//
// Waiters share rounds. A round reads the stream's last key event (one
// direct get) and waits for the feed to apply it; a caller joins the first
// round that starts after it arrived. Rounds start at most once per
// Spacing, so a flood of bad keys costs the stream one read per Spacing,
// and every refusal of an unknown key takes at least a round.
type CatchUp struct {
	Cache   *Cache
	Last    func(ctx context.Context) (uint64, error) // sequence of the stream's last key event
	Spacing time.Duration
	Timeout time.Duration // of one round

	mu      sync.Mutex
	running bool
	next    *round // the round that starts when the running one ends

	// behind is Behind's last answer, given again for a second: /readyz
	// is public, and each look reads the stream.
	behindMu sync.Mutex
	behindAt time.Time
	behind   error
}

// behindFor is how long Behind's answer is given again.
const behindFor = time.Second

type round struct {
	done    chan struct{}
	err     error
	waiters int
}

// NewCatchUp reads the last key event of the IDENTITY stream.
func NewCatchUp(js jetstream.JetStream, cache *Cache) *CatchUp {
	return &CatchUp{Cache: cache, Spacing: 20 * time.Millisecond, Timeout: 2 * time.Second,
		Last: func(ctx context.Context) (uint64, error) {
			m, err := eventstore.GetMsg(ctx, js, events.IdentityStream, eventstore.MsgRequest{LastFor: events.IdentityKeysAll})
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				return 0, nil
			}
			if err != nil {
				return 0, err
			}
			return m.Sequence, nil
		}}
}

// Wait returns once a round that started after the call has ended, with
// its error, or with ctx's.
func (c *CatchUp) Wait(ctx context.Context) error {
	c.mu.Lock()
	if c.next == nil {
		c.next = &round{done: make(chan struct{})}
	}
	r := c.next
	r.waiters++
	if !c.running {
		c.startLocked()
	}
	c.mu.Unlock()
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// startLocked runs the next round, then the one after it if anyone joined
// it meanwhile, no sooner than Spacing after this one started.
func (c *CatchUp) startLocked() {
	r := c.next
	c.next, c.running = nil, true
	go func() {
		started := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), c.Timeout)
		r.err = c.catchUp(ctx)
		cancel()
		close(r.done)
		if rest := c.Spacing - time.Since(started); rest > 0 {
			time.Sleep(rest) // the pace of rounds, not a wait for an outcome
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		c.running = false
		if c.next != nil {
			c.startLocked()
		}
	}()
}

// joined is how many callers wait for the next round (for tests).
func (c *CatchUp) joined() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.next == nil {
		return 0
	}
	return c.next.waiters
}

// Behind says whether the cache is behind the stream: not holding, within
// the round's time-out, the last key event stored. A stream that cannot
// be read says nothing (nil): the cache is what serves meanwhile, and a
// gateway not ready for it would refuse every key. A readiness check, so
// that a replica whose feed stalled stops being sent requests with keys
// revoked since.
func (c *CatchUp) Behind(ctx context.Context) error {
	c.behindMu.Lock()
	defer c.behindMu.Unlock()
	if !c.behindAt.IsZero() && time.Since(c.behindAt) < behindFor {
		return c.behind
	}
	c.behind, c.behindAt = c.behindNow(ctx), time.Now()
	return c.behind
}

func (c *CatchUp) behindNow(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	seq, err := c.Last(ctx)
	if err != nil {
		return nil
	}
	if err := c.Cache.WaitApplied(ctx, seq); err != nil {
		return fmt.Errorf("the key cache has not applied the IDENTITY stream's key event %d within %s", seq, c.Timeout)
	}
	return nil
}

func (c *CatchUp) catchUp(ctx context.Context) error {
	seq, err := c.Last(ctx)
	if err != nil {
		return err
	}
	return c.Cache.WaitApplied(ctx, seq)
}
