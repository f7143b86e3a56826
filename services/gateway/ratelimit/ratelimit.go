// Package ratelimit enforces per-key fixed-window limits shared by every
// gateway replica. Each window is a JetStream counter subject (NATS 2.12
// message counters): an atomic increment answers the new count, so
// replicas agree exactly without compare-and-set loops. Near a key's
// limit every request is one increment per window, and a refused request
// is given back, so only admitted requests count; far from it a replica
// claims a few requests at once (see leases), so a busy key costs a
// replicated write per many requests, not two per request, and claims the
// next few before the last run out, so its requests do not wait for the
// counters.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/eventstore"
)

// Stream holds the counters; memory storage, since a counter outliving its
// window has no value and losing counters on a NATS restart only resets
// the current windows.
const Stream = "RATELIMITS"

const subjectPrefix = "ratelimit."

// Limits are the ceilings of one key.
type Limits struct {
	PerMinute int64
	PerHour   int64
}

// Window is the state of one window after a request.
type Window struct {
	Name      string // "minute" or "hour"
	Limit     int64
	Remaining int64
	Reset     time.Time // when the window ends
	Seconds   int64     // window length
}

// Decision is the outcome for one request.
type Decision struct {
	Allowed bool
	Minute  Window
	Hour    Window
}

// Nearest is the window closest to exhaustion (least remaining, then the
// one resetting first): the one the X-RateLimit-* headers describe.
func (d Decision) Nearest() Window {
	if d.Hour.Remaining < d.Minute.Remaining || (d.Hour.Remaining == d.Minute.Remaining && d.Hour.Reset.Before(d.Minute.Reset)) {
		return d.Hour
	}
	return d.Minute
}

// RetryAfter is how long until every exhausted window has reset.
func (d Decision) RetryAfter(now time.Time) time.Duration {
	var wait time.Duration
	for _, w := range []Window{d.Minute, d.Hour} {
		if w.Remaining <= 0 && w.Reset.Sub(now) > wait {
			wait = w.Reset.Sub(now)
		}
	}
	return wait
}

// Limiter counts requests per key in minute and hour windows.
type Limiter struct {
	js       jetstream.JetStream
	replicas int
	Now      func() time.Time
	keys     sync.Map     // key -> *leases
	claims   atomic.Int64 // counter changes sent (the cost leases save)
	claimed  atomic.Int64 // requests that sent a claim and waited for it (what refills save)
	// downUntil (unix ns) is set when a claim failed: until then Allow
	// answers ErrUnavailable at once instead of trying the counters again.
	downUntil atomic.Int64
}

// ErrUnavailable means the shared counters did not answer in time (a
// leader election, a partition, a NATS restart); the caller counts
// locally meanwhile.
var ErrUnavailable = errors.New("rate limit counters unavailable")

// A claim waits at most claimTimeout for the counters. Requests of one
// key queue behind its claim, so a claim whose answer was lost (its
// stream leader cut off mid-publish) must not hold them for the 15 s an
// async publish may wait: it would stall every request of the key, which
// is what a partition did to the cluster tier. After a failure the
// counters are left alone for retryAfterFailure.
const (
	claimTimeout      = time.Second
	retryAfterFailure = 2 * time.Second
)

// New ensures the counter stream exists and returns a limiter on it.
func New(ctx context.Context, js jetstream.JetStream, replicas int) (*Limiter, error) {
	l := &Limiter{js: js, replicas: max(replicas, 1), Now: time.Now}
	if err := l.ensure(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

// ensure creates the counter stream, or updates it to this config. The
// stream is in memory: counters are worth less than the latency of a disk
// write, and it is made again when its server restarted without it.
func (l *Limiter) ensure(ctx context.Context) error {
	_, err := eventstore.EnsureConfig(ctx, l.js, jetstream.StreamConfig{
		Name:            Stream,
		Subjects:        []string{subjectPrefix + ">"},
		Storage:         jetstream.MemoryStorage,
		Replicas:        l.replicas,
		AllowMsgCounter: true,
		AllowDirect:     true,
		MaxAge:          2 * time.Hour, // longer than the longest window
	})
	if err != nil {
		return fmt.Errorf("rate limit stream: %w", err)
	}
	return nil
}

// Ready reports whether the counters can be reached (a readiness check),
// making the stream again if it is gone.
func (l *Limiter) Ready(ctx context.Context) error {
	_, err := l.js.Stream(ctx, Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return l.ensure(ctx)
	}
	return err
}

// Leases. Counting every request on the shared counter costs a replicated
// write per window per request. A key with many requests left in a window
// has its replica take several at once (a lease, up to maxLease, at most
// a 64th of what is left) and spend them locally; within leaseFloor of its
// limit, every request is counted on the counter again, so the limit
// holds exactly where it matters. The counter never passes the limit: a
// claim that would is given back beyond it. Slots a replica holds and
// stops using go back to the counter after leaseIdle, so another replica
// may refuse a request early by at most those, for at most that long.
//
// Far from the limit, a replica claims the next slots once it holds half
// of maxLease or less (a refill), so that a busy key's requests spend
// slots already there instead of waiting, one in every lease, for a round
// trip to the counters (a replicated write, in a cluster). A refill takes
// no more than brings what the replica holds to maxLease, so the bound
// above stands; claims are about half of maxLease, as many as before.
const (
	leaseFloor = 1024
	maxLease   = 128
	leaseIdle  = time.Second
	minRefill  = 4
)

// lease is what one replica holds of one key's window.
type lease struct {
	reset     time.Time // the window it belongs to
	held      int64     // slots claimed from the counter and not yet spent
	seen      int64     // the counter after this replica's last claim
	size      int64     // the last claim's size
	lastClaim time.Time
	refill    chan refilled // a refill on its way, or landed and not yet counted in
}

// refilled is a refill's outcome.
type refilled struct {
	claim claim
	at    time.Time
	err   error
}

// leases are one key's, in this replica.
type leases struct {
	mu       sync.Mutex
	windows  [2]lease // minute, hour
	lastUse  time.Time
	releaser *time.Timer
	// forgotten: released and taken out of the map; a request that found
	// these leases before then looks the key up again.
	forgotten bool
}

// claimSize is how many slots to claim of a window with limit: 1 near the
// limit; else twice the last when the last claim was spent quickly, half
// when slowly.
func (w *lease) claimSize(limit int64, now time.Time) int64 {
	left := limit - w.seen
	if left < leaseFloor {
		return 1
	}
	size := max(w.size/2, 1)
	if !w.lastClaim.IsZero() && now.Sub(w.lastClaim) < leaseIdle/4 {
		size = w.size * 2
	}
	return min(max(size, 1), maxLease, left/64)
}

// Allow counts one request of key against lim and says whether it may pass.
func (l *Limiter) Allow(ctx context.Context, key string, lim Limits) (Decision, error) {
	now := l.Now()
	wins := [2]Window{window("minute", now, time.Minute, lim.PerMinute), window("hour", now, time.Hour, lim.PerHour)}
	limits := [2]int64{lim.PerMinute, lim.PerHour}
	k := l.leasesOf(key)
	defer func() {
		l.releaseWhenIdle(key, k) // and forgotten, even when refused or failed
		k.mu.Unlock()
	}()
	if l.down(now) {
		return Decision{}, ErrUnavailable // queued behind a claim that failed
	}

	var claims []claim
	for i := range wins {
		w := &k.windows[i]
		if !w.reset.Equal(wins[i].Reset) {
			*w = lease{reset: wins[i].Reset} // a new window; what was held of the last one (and its refill) lapses with it
		}
		if w.refill != nil {
			if err := l.takeRefill(w, limits[i]); err != nil {
				return Decision{}, err
			}
		}
		if w.held == 0 {
			claims = append(claims, claim{window: i, subject: subject(key, wins[i]), size: w.claimSize(limits[i], now)})
		}
	}
	if len(claims) > 0 {
		l.claimed.Add(1)
		if err := l.claim(ctx, claims); err != nil {
			return Decision{}, err
		}
	}
	grants := make([]int64, len(claims))
	for j, c := range claims {
		grants[j] = k.windows[c.window].credit(c, limits[c.window], now)
	}
	allowed := k.windows[0].held > 0 && k.windows[1].held > 0
	var giveBack []claim
	for j, c := range claims {
		excess := c.size - grants[j]
		if !allowed {
			// Refused (by this window or the other): what this request
			// claimed goes back, so it eats no quota (a client blocked for
			// a minute keeps its hour).
			excess = c.size
			w := &k.windows[c.window]
			w.held -= grants[j]
			w.seen -= grants[j]
		}
		if excess > 0 {
			giveBack = append(giveBack, claim{subject: c.subject, size: -excess})
		}
	}
	if len(giveBack) > 0 {
		if err := l.claim(ctx, giveBack); err != nil {
			return Decision{}, err
		}
	}
	if allowed {
		for i := range wins {
			k.windows[i].held--
		}
		l.refillAhead(key, k, wins, limits, now)
		k.lastUse = time.Now()
	}
	d := Decision{Allowed: allowed, Minute: wins[0], Hour: wins[1]}
	for i, w := range []*Window{&d.Minute, &d.Hour} {
		w.Remaining = max(limits[i]-(k.windows[i].seen-k.windows[i].held), 0)
	}
	return d, nil
}

// refillAhead claims the next slots of each window in the background
// once it holds half a lease or less, for a key busy enough that its
// claims have grown to minRefill (a key with a request now and then would
// only claim slots to give back), far from the limit (near it, each
// request is counted as it comes). Both windows' refills go as one claim.
// The caller holds the key's lock.
func (l *Limiter) refillAhead(key string, k *leases, wins [2]Window, limits [2]int64, now time.Time) {
	var cs []claim
	for i := range k.windows {
		w := &k.windows[i]
		if w.refill != nil || w.size < minRefill || w.held > maxLease/2 {
			continue
		}
		if size := min(w.claimSize(limits[i], now), maxLease-w.held); size > 1 {
			cs = append(cs, claim{window: i, subject: subject(key, wins[i]), size: size})
		}
	}
	if len(cs) == 0 {
		return
	}
	done := make([]chan refilled, len(cs))
	for j, c := range cs {
		done[j] = make(chan refilled, 1) // never blocks: a refill of a lapsed window is dropped with it
		k.windows[c.window].refill = done[j]
	}
	go func() {
		err := l.claim(context.Background(), cs)
		for j, c := range cs {
			done[j] <- refilled{claim: c, at: now, err: err}
		}
	}()
}

// credit adds to w what claim c, answered, grants of it (never past the
// limit), and returns that grant.
func (w *lease) credit(c claim, limit int64, at time.Time) (grant int64) {
	grant = max(c.size-max(c.total-limit, 0), 0)
	w.held += grant
	w.seen = c.total - (c.size - grant)
	w.size, w.lastClaim = c.size, at
	return grant
}

// takeRefill counts in w's refill: at once if it has landed, else only
// once w has nothing left to spend, after waiting for it (within
// claimTimeout, as any claim). Slots a refill claimed past the limit
// (other replicas took the rest meanwhile) go back. The caller holds the
// key's lock.
func (l *Limiter) takeRefill(w *lease, limit int64) error {
	var r refilled
	select {
	case r = <-w.refill:
	default:
		if w.held > 0 {
			return nil
		}
		r = <-w.refill
	}
	w.refill = nil
	if r.err != nil {
		if w.held == 0 && l.down(l.Now()) {
			return r.err // claim marked the counters down: none to spend, none to claim
		}
		return nil // an older failure: a claim goes out again when needed
	}
	c := r.claim
	if excess := c.size - w.credit(c, limit, r.at); excess > 0 {
		go func() { _ = l.claim(context.Background(), []claim{{subject: c.subject, size: -excess}}) }()
	}
	return nil
}

// claim is one change of a window's counter.
type claim struct {
	window  int
	subject string
	size    int64 // added to the counter (negative: given back)
	total   int64 // the counter after it
}

// claim applies each change, pipelined, and fills in the totals, within
// claimTimeout. A stream gone with its server's restart is made again,
// and the changes made once. A failure marks the counters down for
// retryAfterFailure.
func (l *Limiter) claim(ctx context.Context, claims []claim) error {
	ctx, cancel := context.WithTimeout(ctx, claimTimeout)
	defer cancel()
	err := l.incr(ctx, claims)
	if errors.Is(err, jetstream.ErrNoStreamResponse) && l.ensure(ctx) == nil {
		err = l.incr(ctx, claims)
	}
	if err != nil {
		l.downUntil.Store(l.Now().Add(retryAfterFailure).UnixNano())
		return errors.Join(ErrUnavailable, err)
	}
	return nil
}

// down reports whether a recent claim failed.
func (l *Limiter) down(now time.Time) bool { return now.UnixNano() < l.downUntil.Load() }

// leasesOf is key's leases, locked: those of the map, never ones
// released and forgotten meanwhile.
func (l *Limiter) leasesOf(key string) *leases {
	for {
		v, _ := l.keys.LoadOrStore(key, &leases{})
		k := v.(*leases)
		k.mu.Lock()
		if !k.forgotten {
			return k
		}
		k.mu.Unlock()
	}
}

// releaseWhenIdle gives the slots key holds back to the counters once it
// has had no request for leaseIdle, so other replicas may use them, and
// forgets the key: a replica keeps nothing of a key it no longer sees
// (keys made for one CI job each would otherwise pile up for the life of
// the process). The counters remember what was spent; the key's next
// request claims from them anew. The caller holds k.mu.
func (l *Limiter) releaseWhenIdle(key string, k *leases) {
	if k.releaser != nil {
		return // armed; it looks at lastUse when it fires
	}
	var release func()
	release = func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		if idle := time.Since(k.lastUse); idle < leaseIdle {
			k.releaser = time.AfterFunc(leaseIdle-idle, release)
			return
		}
		for i := range k.windows {
			if w := &k.windows[i]; w.refill != nil {
				select {
				case r := <-w.refill: // landed: its slots are held too
					w.refill = nil
					if r.err == nil {
						w.held += r.claim.size
					}
				default: // on its way: look again once it has landed
					k.releaser = time.AfterFunc(leaseIdle/10, release)
					return
				}
			}
		}
		k.releaser = nil
		var back []claim
		for i := range k.windows {
			w := &k.windows[i]
			if w.held > 0 {
				names := [2]string{"minute", "hour"}
				back = append(back, claim{subject: subject(key, Window{Name: names[i], Reset: w.reset}), size: -w.held})
				w.seen -= w.held
				w.held = 0
			}
		}
		k.forgotten = true
		l.keys.CompareAndDelete(key, k)
		if len(back) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = l.claim(ctx, back) // unreturned, they lapse with their window
	}
	k.releaser = time.AfterFunc(leaseIdle, release)
}

func window(name string, now time.Time, size time.Duration, limit int64) Window {
	start := now.Truncate(size)
	return Window{Name: name, Limit: limit, Reset: start.Add(size), Seconds: int64(size / time.Second)}
}

func subject(key string, w Window) string {
	return subjectPrefix + key + "." + w.Name[:1] + "." + strconv.FormatInt(w.Reset.Unix(), 10)
}

// incr adds each claim's size to its subject's counter, pipelined, and
// records the new totals.
func (l *Limiter) incr(ctx context.Context, claims []claim) error {
	l.claims.Add(int64(len(claims)))
	futures := make([]jetstream.PubAckFuture, len(claims))
	for i, c := range claims {
		msg := nats.NewMsg(c.subject)
		msg.Header.Set("Nats-Incr", strconv.FormatInt(c.size, 10))
		f, err := l.js.PublishMsgAsync(msg)
		if err != nil {
			return fmt.Errorf("rate limit counter: %w", err)
		}
		futures[i] = f
	}
	for i, f := range futures {
		select {
		case ack := <-f.Ok():
			v, err := strconv.ParseInt(ack.Value, 10, 64)
			if err != nil {
				return fmt.Errorf("rate limit counter %s: value %q", claims[i].subject, ack.Value)
			}
			claims[i].total = v
		case err := <-f.Err():
			return fmt.Errorf("rate limit counter: %w", err)
		case <-ctx.Done():
			return errors.Join(errors.New("rate limit counter: no answer"), ctx.Err())
		}
	}
	return nil
}
