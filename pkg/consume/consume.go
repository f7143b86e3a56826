// Package consume is the one way the platform works through a JetStream
// durable consumer, in two modes on the same Spec:
//
//   - Batches: each batch is what has arrived (optionally lingering for
//     more), handled as one, then acknowledged; a batch whose handling
//     fails is redelivered with back-off (or only the messages the
//     handler names, Failed), so nothing is skipped (projectors, stores
//     that write many documents at once, the webhook fan-out).
//   - Messages: each message is handled on its own, by a pool of workers,
//     and the handler says what becomes of it: Done, Retry after a delay,
//     or GiveUp (job queues: webhook deliveries, test runs).
//
// Every replica of a process shares the durable, so a killed one loses
// nothing: what it held unacknowledged goes to another after AckWait. A
// durable deleted while consumed is made again (heal.go), and one deleted
// while none ran is made again where it was (floors.go).
// Ending ctx stops either mode without failing: what was not handled is
// given back at once to be redelivered, never acknowledged.
package consume

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/fifo"
)

// Spec is the durable consumer and how batches are formed.
type Spec struct {
	Stream         string
	Durable        string
	FilterSubjects []string
	// AckWait is how long what nobody holds waits to be delivered again
	// (default 30s): what a killed replica held, or what a lost node
	// delivered to no one. Batches says of what it holds that it is in
	// hand, so it may be short.
	AckWait    time.Duration
	MaxDeliver int // default unlimited: nothing may be skipped
	MaxBatch   int // default 256
	// MaxAckPending bounds the messages out at once (default 4 batches).
	// A message waiting for a Retry counts: a job queue whose jobs wait
	// long for their retries sets it high.
	MaxAckPending int
	// Linger, when set, holds a batch open this long after its first
	// message so that more join it, up to MaxBatch.
	Linger time.Duration
	// OnError is told of a batch that failed before it is redelivered
	// (logging, metrics); optional. Batches only.
	OnError func(batch []jetstream.Msg, err error)
	// Workers is how many messages Messages handles at once (default 1,
	// in stream order). Messages only.
	Workers int
	// Existing, when set, works through the durable as it stands and
	// never creates or updates it: jetstream.ErrConsumerNotFound when it
	// is not there (a durable being retired, which a replica that is done
	// with it deletes: another must not make it anew). Its deletion ends
	// the consumption.
	Existing bool
	// Log is told when the durable is deleted and made again (default
	// slog.Default()).
	Log *slog.Logger
	// Hold, when set, says why the consumer must not go on, or nil. A
	// process holds its consumers' writes while the disk under its data
	// is nearly full. Batches asks before each batch: while held, nothing
	// more is handled and what is in hand waits, said to be in hand so
	// that it is not delivered again. Messages asks every holdEvery: while
	// held, it pulls nothing and keeps what it had pulled in hand, neither
	// handled nor delivered again (its workers finish what they hold),
	// until the hold ends.
	Hold func() error
}

// holdEvery is how often a held consumer asks whether it may go on.
var holdEvery = time.Second

// held waits while s.Hold says to; false once ctx ended first.
func (s Spec) held(ctx context.Context) bool {
	return WaitWhileHeld(ctx, s.Hold, s.logger(), s.Durable)
}

// WaitWhileHeld waits while hold (nil: never) says why the work of
// durable must not go on, asking again every holdEvery, and logs once
// when it holds and once when it goes on; false once ctx ended first.
func WaitWhileHeld(ctx context.Context, hold func() error, log *slog.Logger, durable string) bool {
	if hold == nil {
		return true
	}
	since := time.Time{}
	for {
		err := hold()
		if err == nil {
			if !since.IsZero() {
				log.Info("consumer going on", "durable", durable, "held", time.Since(since).Round(time.Millisecond))
			}
			return true
		}
		if since.IsZero() {
			since = time.Now()
			log.Info("consumer holding its work", "durable", durable, "reason", err)
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(holdEvery):
		}
	}
}

func (s Spec) logger() *slog.Logger {
	if s.Log == nil {
		return slog.Default()
	}
	return s.Log
}

// Handler handles one batch; an error has the whole batch redelivered,
// unless it is Failed's, which names the messages to redeliver.
type Handler func(ctx context.Context, batch []jetstream.Msg) error

// Failed is what a Handler returns when it handled its batch but for the
// messages at the indices given: those are redelivered with back-off, the
// others acknowledged. One message that cannot be handled thus does not
// hold up the rest of its batch, batch after batch.
func Failed(err error, indices ...int) error {
	return &partial{err: err, failed: indices}
}

type partial struct {
	err    error
	failed []int
}

func (p *partial) Error() string {
	return fmt.Sprintf("%d messages of the batch failed: %v", len(p.failed), p.err)
}

func (p *partial) Unwrap() error { return p.err }

// Batches creates or updates the durable and feeds its batches to h until
// ctx ends. Ending ctx is not a failure: the batch in hand, if h did not
// finish it, and what was pulled but not handled are given back at once
// (nak, in stream order) to whoever comes next, not held until AckWait
// runs out.
func Batches(ctx context.Context, js jetstream.JetStream, s Spec, h Handler) error {
	return untilStopped(StartBatches(ctx, js, s, h))
}

// untilStopped waits for a consumer started in the background to stop
// (StartBatches, StartMessages), or returns why it could not start.
func untilStopped(wait func(), err error) error {
	if err != nil {
		return err
	}
	wait()
	return nil
}

// StartBatches is Batches returning once the durable exists (or could not
// be made: its error), for a process that must not start without its
// consumers. The batches are handled in the background until ctx ends;
// wait returns once what was not handled has been given back.
func StartBatches(ctx context.Context, js jetstream.JetStream, s Spec, h Handler) (wait func(), err error) {
	if s.MaxBatch <= 0 {
		s.MaxBatch = 256
	}
	cons, floors, err := ensure(ctx, js, s)
	if cons == nil {
		return func() {}, err
	}
	// What it was handed and has not yet put in a batch, in order: the
	// callback only adds to it, never waits, so that no message sits in
	// the client library's buffer out of the keeper's sight (it would be
	// delivered again after AckWait). The server bounds it (MaxAckPending).
	in, inHand := fifo.New[jetstream.Msg](0), newHeld()
	take := func(m jetstream.Msg) {
		inHand.add(m)
		in.Push(m)
	}
	ss, err := consumeSession(ctx, js, s, floors, cons, func(*session) jetstream.MessageHandler { return take })
	if err != nil {
		return func() {}, fmt.Errorf("consumer %s: %w", s.Durable, err)
	}
	go inHand.keep(ctx, keepEvery(cons.CachedInfo().Config.AckWait))
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			sctx, cancel := context.WithCancel(ctx)
			go func() {
				select {
				case <-ss.gone:
					cancel()
				case <-sctx.Done():
				}
			}()
			unhandled := handleBatches(sctx, s, in, inHand, h) // the batch in hand when stopping
			cancel()
			if ctx.Err() != nil {
				ss.cc.Drain() // what the client holds reaches the inbox
				<-ss.cc.Closed()
				giveBack(append(unhandled, in.TakeAll()...))
				return
			}
			// The durable is gone: what it handed out and was not handled
			// comes again from the one made in its place.
			ss.cc.Stop()
			inHand.settled(append(unhandled, in.TakeAll()...)...)
			if ss = remade(ctx, js, s, floors, ss.position(), func(*session) jetstream.MessageHandler { return take }); ss == nil {
				return
			}
		}
	}()
	return func() { <-stopped }, nil
}

// remade makes s's deleted durable again after at (remake) and
// consumes it as consumeSession does; nil when ctx ended first, or the
// durable was one being retired.
func remade(ctx context.Context, js jetstream.JetStream, s Spec, floors *floorBook, at position, handler func(*session) jetstream.MessageHandler, opts ...jetstream.PullConsumeOpt) *session {
	for {
		cons := remake(ctx, js, s, at)
		if cons == nil {
			return nil
		}
		ss, err := consumeSession(ctx, js, s, floors, cons, handler, opts...)
		if err == nil {
			return ss
		}
		s.logger().Error("cannot consume the durable made again; making it again", "stream", s.Stream, "durable", s.Durable, "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

// handleBatches feeds h the batches the inbox brings until ctx ends, and
// returns the batch it held then, unfinished.
func handleBatches(ctx context.Context, s Spec, in *fifo.Queue[jetstream.Msg], inHand *held, h Handler) (unhandled []jetstream.Msg) {
	batch := make([]jetstream.Msg, 0, s.MaxBatch)
	for ctx.Err() == nil {
		batch = in.TakeUpTo(batch[:0], s.MaxBatch)
		if len(batch) == 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-in.Ready():
				continue
			}
		}
		batch = fill(ctx, batch, in, s.MaxBatch, s.Linger)
		if !s.held(ctx) { // (the keeper keeps the batch in hand meanwhile)
			return slices.Clone(batch) // stopping: given back
		}
		if err := h(ctx, batch); err != nil {
			if ctx.Err() != nil {
				return slices.Clone(batch) // stopping: given back
			}
			redo := failedOf(len(batch), err)
			if s.OnError != nil {
				var failed []jetstream.Msg
				for i, m := range batch {
					if redo(i) {
						failed = append(failed, m)
					}
				}
				s.OnError(failed, err)
			}
			for i, m := range batch {
				if !redo(i) {
					_ = m.Ack()
					continue
				}
				delay := time.Second
				if meta, _ := m.Metadata(); meta != nil {
					delay = Backoff(meta.NumDelivered)
				}
				_ = m.NakWithDelay(delay)
			}
			inHand.settled(batch...)
			continue
		}
		for _, m := range batch {
			_ = m.Ack()
		}
		inHand.settled(batch...)
	}
	return nil
}

// pullExpiry is how long each of a consumer's pull requests lasts, and so
// how soon the client finds one lost (it misses two heartbeats, half as
// far apart) and asks again: a pull request the lost node held, or the
// lost leader of the consumer, is dead, and the client library's default
// (30 s) held a consumer that long without a message after a node was
// lost. A pull request also goes missing without any fault, now and then
// (nats-io/nats.go#1622: the server waits on no pull while the client
// thinks one is open): the webhook deliveries of the cluster bench stopped
// for the whole 5 s this was, in about one run of five. So it is 2 s, a
// pull request and a heartbeat a second from each idle consumer.
var pullExpiry = jetstream.PullExpiry(2 * time.Second)

// keepEvery is how often the messages held are said to be in hand, for a
// consumer whose AckWait is ackWait: three times within it.
func keepEvery(ackWait time.Duration) time.Duration {
	if ackWait <= 0 {
		ackWait = 30 * time.Second // the server's default
	}
	return ackWait / 3
}

// failedOf tells which messages of a batch of n a handler's err has
// redelivered: all of them, or those Failed names.
func failedOf(n int, err error) func(i int) bool {
	var p *partial
	if !errors.As(err, &p) {
		return func(int) bool { return true }
	}
	failed := make([]bool, n)
	for _, i := range p.failed {
		if i >= 0 && i < n {
			failed[i] = true
		}
	}
	return func(i int) bool { return failed[i] }
}

// giveBack naks msgs in stream order, the order the server then
// redelivers them in.
func giveBack(msgs []jetstream.Msg) {
	seq := func(m jetstream.Msg) uint64 {
		if meta, err := m.Metadata(); err == nil {
			return meta.Sequence.Stream
		}
		return 0
	}
	slices.SortFunc(msgs, func(a, b jetstream.Msg) int { return cmp.Compare(seq(a), seq(b)) })
	for _, m := range msgs {
		_ = m.Nak()
	}
}

// ensure creates or updates the durable s names, with the defaults both
// modes share (s.MaxBatch set), and opens the book its floors are kept
// in (none for a durable being retired). A nil consumer with a nil error
// means ctx ended while starting: not a failure.
func ensure(ctx context.Context, js jetstream.JetStream, s Spec) (jetstream.Consumer, *floorBook, error) {
	if s.Existing {
		cons, err := js.Consumer(ctx, s.Stream, s.Durable)
		if ctx.Err() != nil {
			return nil, nil, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("consumer %s: %w", s.Durable, err)
		}
		return cons, nil, nil
	}
	// One missing at start is made after its kept floor (floors.go); one
	// made again after a deletion keeps where it starts (remake,
	// eventstore.EnsureConsumer).
	floors := openFloors(ctx, js, s)
	cons, err := eventstore.EnsureConsumer(ctx, js, s.Stream, floors.startOf(ctx, js, s, configOf(s)))
	if ctx.Err() != nil {
		return nil, nil, nil // stopped while starting
	}
	if err != nil {
		return nil, nil, fmt.Errorf("consumer %s: %w", s.Durable, err)
	}
	return cons, floors, nil
}

// configOf is the durable s names, with the defaults both modes share
// (s.MaxBatch set), delivering the stream from its start.
func configOf(s Spec) jetstream.ConsumerConfig {
	if s.AckWait <= 0 {
		s.AckWait = 30 * time.Second
	}
	if s.MaxDeliver == 0 {
		s.MaxDeliver = -1
	}
	if s.MaxAckPending <= 0 {
		s.MaxAckPending = 4 * s.MaxBatch
	}
	return jetstream.ConsumerConfig{
		Durable: s.Durable, FilterSubjects: s.FilterSubjects, DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: s.AckWait, MaxDeliver: s.MaxDeliver, MaxAckPending: s.MaxAckPending,
	}
}

// Backoff is the wait before the next delivery of a message delivered
// n times: 500 ms doubling, at most 30 s.
func Backoff(delivered uint64) time.Duration {
	d := 250 * time.Millisecond << min(delivered, 7)
	return min(d, 30*time.Second)
}

// fill adds to batch what the inbox holds, up to limit; with a linger it
// waits that long for more before giving up.
func fill(ctx context.Context, batch []jetstream.Msg, in *fifo.Queue[jetstream.Msg], limit int, linger time.Duration) []jetstream.Msg {
	batch = in.TakeUpTo(batch, limit)
	if linger <= 0 || len(batch) >= limit {
		return batch
	}
	t := time.NewTimer(linger)
	defer t.Stop()
	for len(batch) < limit {
		select {
		case <-in.Ready():
			batch = in.TakeUpTo(batch, limit)
		case <-t.C:
			return batch
		case <-ctx.Done():
			return batch
		}
	}
	return batch
}
