// Package ratelimit enforces per-key fixed-window limits shared by every
// gateway replica. Each window is a JetStream counter subject (NATS 2.12
// message counters): one atomic increment per request answers the new
// count, so replicas agree exactly without compare-and-set loops. A
// refused request is decremented again, so only admitted requests count.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
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
}

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

// Allow counts one request of key against lim and says whether it may pass.
func (l *Limiter) Allow(ctx context.Context, key string, lim Limits) (Decision, error) {
	now := l.Now()
	minute := window("minute", now, time.Minute, lim.PerMinute)
	hour := window("hour", now, time.Hour, lim.PerHour)
	mSubj := subject(key, minute)
	hSubj := subject(key, hour)

	counts, err := l.incr(ctx, 1, mSubj, hSubj)
	if errors.Is(err, jetstream.ErrNoStreamResponse) && l.ensure(ctx) == nil {
		// Nothing stored the counts: the memory stream went with a server
		// restart. It is made again, and the request counted once.
		counts, err = l.incr(ctx, 1, mSubj, hSubj)
	}
	if err != nil {
		return Decision{}, err
	}
	minute.Remaining = lim.PerMinute - counts[0]
	hour.Remaining = lim.PerHour - counts[1]
	d := Decision{Allowed: minute.Remaining >= 0 && hour.Remaining >= 0, Minute: minute, Hour: hour}
	if !d.Allowed {
		// Give the refused request back, so it does not eat the quota of
		// the other window (a client blocked for a minute keeps its hour).
		if _, err := l.incr(ctx, -1, mSubj, hSubj); err != nil {
			return d, err
		}
		d.Minute.Remaining++
		d.Hour.Remaining++
	}
	d.Minute.Remaining = max(d.Minute.Remaining, 0)
	d.Hour.Remaining = max(d.Hour.Remaining, 0)
	return d, nil
}

func window(name string, now time.Time, size time.Duration, limit int64) Window {
	start := now.Truncate(size)
	return Window{Name: name, Limit: limit, Reset: start.Add(size), Seconds: int64(size / time.Second)}
}

func subject(key string, w Window) string {
	return subjectPrefix + key + "." + w.Name[:1] + "." + strconv.FormatInt(w.Reset.Unix(), 10)
}

// incr adds delta to each subject's counter, pipelined, and returns the
// new values in order.
func (l *Limiter) incr(ctx context.Context, delta int, subjects ...string) ([]int64, error) {
	futures := make([]jetstream.PubAckFuture, len(subjects))
	for i, s := range subjects {
		msg := nats.NewMsg(s)
		msg.Header.Set("Nats-Incr", strconv.Itoa(delta))
		f, err := l.js.PublishMsgAsync(msg)
		if err != nil {
			return nil, fmt.Errorf("rate limit counter: %w", err)
		}
		futures[i] = f
	}
	out := make([]int64, len(subjects))
	for i, f := range futures {
		select {
		case ack := <-f.Ok():
			v, err := strconv.ParseInt(ack.Value, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("rate limit counter %s: value %q", subjects[i], ack.Value)
			}
			out[i] = v
		case err := <-f.Err():
			return nil, fmt.Errorf("rate limit counter: %w", err)
		case <-ctx.Done():
			return nil, errors.Join(errors.New("rate limit counter: no answer"), ctx.Err())
		}
	}
	return out, nil
}
