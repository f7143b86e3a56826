package consume

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/fifo"
	"github.com/voiceai-platform/voiceai/pkg/tick"
)

// Msg is one message of the per-message mode: the stored record
// (subject, headers, data, stream sequence, when it was stored) and how
// many times it was delivered. A handler reads it without naming
// JetStream, and settles it by what it returns, never by hand.
type Msg struct {
	eventstore.Record
	// Delivered is 1 on the first delivery, 2 on the first redelivery...
	Delivered uint64
	raw       jetstream.Msg
}

// InProgress tells the server the handler is still at work, so the
// message is not handed to another consumer when AckWait runs out (a long
// job calls it more often than AckWait).
func (m Msg) InProgress() error { return m.raw.InProgress() }

// Outcome is what a per-message handler decided for its message: Done,
// Retry or GiveUp.
type Outcome struct {
	settle  settle
	after   time.Duration
	backoff bool
}

type settle int

const (
	ack settle = iota
	retry
	term
)

// Done acknowledges the message: it is never delivered again.
func Done() Outcome { return Outcome{settle: ack} }

// Retry has the message delivered again after the delay (0: at once).
func Retry(after time.Duration) Outcome { return Outcome{settle: retry, after: max(after, 0)} }

// RetryWithBackoff has the message delivered again after the standard
// back-off for its delivery count (Backoff): for a failure whose cure is
// not known to come at a given time (a store unavailable).
func RetryWithBackoff() Outcome { return Outcome{settle: retry, backoff: true} }

// GiveUp drops the message for good (it cannot be handled, or its retries
// are exhausted): it is never delivered again.
func GiveUp() Outcome { return Outcome{settle: term} }

// String names the outcome, for logs and tests.
func (o Outcome) String() string {
	switch o.settle {
	case ack:
		return "done"
	case retry:
		if o.backoff {
			return "retry with back-off"
		}
		return fmt.Sprintf("retry after %s", o.after)
	default:
		return "give up"
	}
}

// IsDone, IsRetry and IsGiveUp tell a test which outcome it holds.
func (o Outcome) IsDone() bool { return o.settle == ack }

// IsRetry reports a retry and its delay (RetryWithBackoff's: -1).
func (o Outcome) IsRetry() (bool, time.Duration) {
	if o.backoff {
		return o.settle == retry, -1
	}
	return o.settle == retry, o.after
}

// IsGiveUp reports a message dropped for good.
func (o Outcome) IsGiveUp() bool { return o.settle == term }

// MsgHandler handles one message and says what becomes of it.
type MsgHandler func(ctx context.Context, m Msg) Outcome

// Messages is the per-message mode: it creates or updates the durable as
// Batches does (explicit acks, redelivered after AckWait, never skipped
// unless a handler gives up) and hands its messages one at a time to h,
// on Spec.Workers goroutines (default 1: in stream order). Each message
// is settled by h's Outcome. MaxBatch is how many messages are pulled
// from the server at once (default: Workers).
//
// Ending ctx is not a failure: Messages stops taking messages, waits for
// the handlers in flight and settles each by its outcome, and returns
// nil. A message pulled but not yet handled is given back (nak) for the
// next consumer; nothing is acknowledged that a handler did not finish.
// A handler that must finish what it started even so (an HTTP attempt
// under way) detaches from ctx (context.WithoutCancel) and bounds itself.
func Messages(ctx context.Context, js jetstream.JetStream, s Spec, h MsgHandler) error {
	return untilStopped(StartMessages(ctx, js, s, h))
}

// StartMessages is Messages returning once the durable exists (or could
// not be made: its error), for a process that must not start without its
// consumers. The messages are handled in the background until ctx ends;
// wait returns once the last handler in flight has settled its message.
func StartMessages(ctx context.Context, js jetstream.JetStream, s Spec, h MsgHandler) (wait func(), err error) {
	workers := max(s.Workers, 1)
	if s.MaxBatch <= 0 {
		s.MaxBatch = workers
	}
	cons, floors, err := ensure(ctx, js, s)
	if cons == nil {
		return func() {}, err
	}
	// Each message comes with the session that handed it out: one whose
	// durable is gone is not handled, its successor hands it out again.
	type delivered struct {
		m  jetstream.Msg
		ss *session
	}
	msgs := make(chan delivered)
	// What the client library hands over while a hold ends its pull loop
	// is kept here, said to be in hand, rather than given back: a job
	// given back would come again as a later delivery, and a webhook
	// delivery's attempt number is its delivery count.
	kept, inHand := fifo.New[jetstream.Msg](0), newHeld()
	if s.Hold != nil { // nothing is kept otherwise
		go inHand.keep(ctx, keepEvery(cons.CachedInfo().Config.AckWait))
	}
	take := func(ss *session) jetstream.MessageHandler {
		return func(m jetstream.Msg) {
			if ss.paused.Load() {
				inHand.add(m)
				kept.Push(m)
				return
			}
			select {
			case msgs <- delivered{m, ss}:
			case <-ctx.Done():
				_ = m.Nak() // not handled: straight to the next consumer
			case <-ss.gone:
			}
		}
	}
	ss, err := consumeSession(ctx, js, s, floors, cons, take, jetstream.PullMaxMessages(s.MaxBatch))
	if err != nil {
		return func() {}, fmt.Errorf("consumer %s: %w", s.Durable, err)
	}
	// A handler may take longer than AckWait (a webhook attempt's
	// catch-up, send and disable write): its message is said to be in
	// progress meanwhile, not delivered to another replica mid-attempt.
	working := keepEvery(cons.CachedInfo().Config.AckWait)
	quit := make(chan struct{}) // the durable, being retired, was deleted
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-quit:
					return
				case d := <-msgs:
					if ctx.Err() != nil {
						_ = d.m.Nak()
						return
					}
					if !d.ss.isGone() {
						handleOne(ctx, d.m, h, working)
					}
				}
			}
		})
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		var holdCheck <-chan time.Time // nil: never held
		if s.Hold != nil {
			t := time.NewTicker(holdEvery)
			defer t.Stop()
			holdCheck = t.C
		}
		for {
			select {
			case <-holdCheck:
				if s.Hold() == nil {
					continue
				}
				paused := ss // what it kept is handled as its own
				hand := func(m jetstream.Msg) bool {
					select {
					case msgs <- delivered{m, paused}:
						return true
					case <-ctx.Done():
						return false
					}
				}
				if ss = holdMessages(ctx, js, s, floors, ss, take, kept, inHand, hand); ss != nil {
					continue
				}
				if ctx.Err() == nil {
					close(quit) // a durable being retired, deleted meanwhile
				}
				wg.Wait()
				return
			case <-ss.gone:
				// The durable is gone: what it handed out and was not
				// handled comes again from the one made in its place.
				ss.cc.Stop()
				if next := remade(ctx, js, s, floors, ss.position(), take, jetstream.PullMaxMessages(s.MaxBatch)); next != nil {
					ss = next
					continue
				}
				if ctx.Err() == nil {
					close(quit) // a durable being retired: done with it
					wg.Wait()
					return
				}
			case <-ctx.Done():
			}
			ss.cc.Drain() // what the client holds reaches the callback, which naks it
			<-ss.cc.Closed()
			wg.Wait()
			return
		}
	}()
	return func() { <-stopped }, nil
}

// holdMessages holds a Messages consumer while s.Hold says to: its pull
// loop ends, what the client library had pulled is kept (said to be in
// hand, so not delivered again however long the hold) and the workers
// finish what they have. Once the hold ends, what was kept goes to the
// workers (through hand, false once ctx ended) and a new pull loop
// starts: it returns that session, or nil when ctx ended first (what was
// kept is given back) or the durable was one being retired.
func holdMessages(ctx context.Context, js jetstream.JetStream, s Spec, floors *floorBook, ss *session,
	take func(*session) jetstream.MessageHandler, kept *fifo.Queue[jetstream.Msg], inHand *held, hand func(jetstream.Msg) bool) *session {
	ss.paused.Store(true)
	ss.cc.Drain() // what the client library holds reaches take, which keeps it
	<-ss.cc.Closed()
	going := s.held(ctx)
	waiting := kept.TakeAll()
	inHand.settled(waiting...)
	for i, m := range waiting {
		if !going || !hand(m) {
			giveBack(waiting[i:])
			return nil
		}
	}
	next, err := consumeSession(ctx, js, s, floors, ss.cons, take, jetstream.PullMaxMessages(s.MaxBatch))
	if err != nil {
		// The durable went meanwhile: made again where it was.
		next = remade(ctx, js, s, floors, ss.position(), take, jetstream.PullMaxMessages(s.MaxBatch))
	}
	return next
}

// handleOne runs h on m, saying m is in progress every working while h
// runs, and settles m by its outcome.
func handleOne(ctx context.Context, m jetstream.Msg, h MsgHandler, working time.Duration) {
	meta, err := m.Metadata()
	if err != nil {
		_ = m.Term() // not a stream message: nothing to retry
		return
	}
	rec, _ := eventstore.RecordFromMsg(m)
	stopBeating := tick.Until(working, func() { _ = m.InProgress() })
	o := h(ctx, Msg{Record: rec, Delivered: meta.NumDelivered, raw: m})
	stopBeating()
	switch o.settle {
	case ack:
		_ = m.Ack()
	case retry:
		delay := o.after
		if o.backoff {
			delay = Backoff(meta.NumDelivered)
		}
		_ = m.NakWithDelay(delay)
	default:
		_ = m.Term()
	}
}
