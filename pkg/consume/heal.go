package consume

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A durable deleted while it is consumed (by an operator, a restore from
// backup, a JetStream mishap) is made again, as the client library does
// for an ordered consumer; left gone, its messages would wait, unseen and
// unannounced, forever. The new one starts after the acknowledgement
// floor the old one had when last read: nothing left unacknowledged is
// skipped and the stream's history is not handled again. What was
// acknowledged above that floor, or since it was read, comes again (at
// least once, as after any crash).

// floorEvery is how often a consumed durable's acknowledgement floor is
// read (nanoseconds; default 5 s): at most this much acknowledged work is
// handled again when the durable has to be made anew. Atomic: a test
// sets it back while the consumers it ran, which its cleanup stops, may
// still be reading it.
var floorEvery = func() *atomic.Int64 {
	var d atomic.Int64
	d.Store(int64(5 * time.Second))
	return &d
}()

// floorsRead and floorsSaved count the floors read and kept
// (floors.go), for tests to wait on.
var floorsRead, floorsSaved atomic.Uint64

// remakeBackoff bounds the wait between attempts to make a deleted
// durable again (its stream may be gone too, until it is restored);
// remakeSettle is the least wait before the first (see remake).
const (
	remakeBackoff = 30 * time.Second
	remakeSettle  = 250 * time.Millisecond
)

// session is one consumption of a durable: the client library's pull
// loop on it, and what tells that the durable is gone.
type session struct {
	cons     jetstream.Consumer
	cc       jetstream.ConsumeContext
	gone     chan struct{} // closed when the durable is found deleted
	paused   atomic.Bool   // its pull loop is being ended on purpose (Messages' hold), not lost
	once     sync.Once
	floor    atomic.Uint64 // the durable's acknowledgement floor (a stream sequence) as last read
	made     time.Time     // when the durable was made: its stream is older
	checking atomic.Bool   // an existence check is under way
	floors   *floorBook    // where the floor read is kept
}

// position is where a durable made again starts: after floor, in a
// stream made before made (a later one is a stream made anew).
type position struct {
	floor uint64
	made  time.Time
}

func (ss *session) position() position { return position{ss.floor.Load(), ss.made} }

func (ss *session) lost() { ss.once.Do(func() { close(ss.gone) }) }

// isGone reports whether the durable this session consumed is gone: what
// it handed out is not to be handled, its successor hands it out again.
func (ss *session) isGone() bool {
	select {
	case <-ss.gone:
		return true
	default:
		return false
	}
}

// consumeSession starts consuming cons, handing each message to the
// handler handler makes for the session (made before any message comes), and
// watches for the durable's deletion: told by the server (a pull answered
// "consumer deleted"), or found when pulls go unanswered (a deletion while
// this process was away from the server). It follows the durable's
// acknowledgement floor (kept in floors) until the session is gone or ctx
// ends.
func consumeSession(ctx context.Context, js jetstream.JetStream, s Spec, floors *floorBook, cons jetstream.Consumer, handler func(*session) jetstream.MessageHandler, opts ...jetstream.PullConsumeOpt) (*session, error) {
	info := cons.CachedInfo()
	ss := &session{cons: cons, gone: make(chan struct{}), made: info.Created, floors: floors}
	ss.floor.Store(info.AckFloor.Stream)
	onError := jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		switch {
		case errors.Is(err, jetstream.ErrConsumerDeleted):
			ss.lost()
		case errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrNoHeartbeat):
			if ss.checking.CompareAndSwap(false, true) {
				go func() {
					defer ss.checking.Store(false)
					if _, err := js.Consumer(ctx, s.Stream, s.Durable); errors.Is(err, jetstream.ErrConsumerNotFound) {
						ss.lost()
					}
				}()
			}
		}
	})
	cc, err := cons.Consume(handler(ss), append(opts, pullExpiry, onError)...)
	if err != nil {
		return nil, err
	}
	ss.cc = cc
	go ss.follow(ctx, cons)
	return ss, nil
}

// follow reads the durable's acknowledgement floor every floorEvery, and
// takes a pull loop the client library ended on its own (a terminal
// error) for a durable gone: made again, or found again, it is consumed
// anew.
func (ss *session) follow(ctx context.Context, cons jetstream.Consumer) {
	t := time.NewTicker(time.Duration(floorEvery.Load()))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ss.gone:
			return
		case <-ss.cc.Closed():
			if ctx.Err() == nil && !ss.paused.Load() {
				ss.lost()
			}
			return
		case <-t.C:
			if info, err := cons.Info(ctx); err == nil {
				ss.floor.Store(info.AckFloor.Stream)
				floorsRead.Add(1)
				ss.floors.save(ctx, ss.position())
			}
		}
	}
}

// remake makes s's durable again, to start after at (createAfter), or
// binds to the one another replica made again first; it asks until it
// succeeds or ctx ends (nil then). A durable being retired (Existing) is
// not made again: nil.
func remake(ctx context.Context, js jetstream.JetStream, s Spec, at position) jetstream.Consumer {
	if s.Existing {
		return nil
	}
	log := s.logger().With("stream", s.Stream, "durable", s.Durable)
	log.Warn("the durable consumer was deleted; making it again after its acknowledgement floor", "from_sequence", at.floor+1)
	// The server removes a deleted consumer's files after telling its
	// pulls, and removed those of one made at once under the same name
	// (which then could not be updated: a restart failed). Waiting a
	// moment lets it finish, and sets replicas apart.
	wait := remakeSettle + rand.N(remakeSettle)
	for attempt := uint64(1); ; attempt++ {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		cons, err := js.Consumer(ctx, s.Stream, s.Durable) // made again by another replica?
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			cons, err = createAfter(ctx, js, s, at)
			if errors.Is(err, jetstream.ErrConsumerExists) {
				cons, err = js.Consumer(ctx, s.Stream, s.Durable)
			}
		}
		if err == nil {
			// Its settings written once more: one whose files went with
			// its predecessor's is refused by the server here, and is made
			// again.
			if _, err = js.UpdateConsumer(ctx, s.Stream, cons.CachedInfo().Config); err == nil {
				log.Info("the durable consumer is back")
				return cons
			}
			if apiErr := (*jetstream.APIError)(nil); errors.As(err, &apiErr) {
				_ = js.DeleteConsumer(ctx, s.Stream, s.Durable)
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		wait = min(Backoff(attempt), remakeBackoff)
		log.Error("cannot make the deleted durable consumer again; retrying", "err", err, "retry_in", wait)
	}
}

// createAfter creates s's durable to start after at's floor (configAfter).
func createAfter(ctx context.Context, js jetstream.JetStream, s Spec, at position) (jetstream.Consumer, error) {
	str, err := js.Stream(ctx, s.Stream)
	if err != nil {
		return nil, err
	}
	return js.CreateConsumer(ctx, s.Stream, configAfter(str.CachedInfo(), configOf(s), at))
}

// configAfter is cfg made to start after at's floor in the stream info
// describes. It starts from the stream's first message instead when the
// floor means nothing there: in a work queue, which keeps only what is
// not yet acknowledged (and whose consumers must deliver all of it), and
// in a stream made anew after the durable the floor is of (deleted with
// its durables, then made again by a service's start: its sequences begin
// again at 1).
func configAfter(info *jetstream.StreamInfo, cfg jetstream.ConsumerConfig, at position) jetstream.ConsumerConfig {
	sameStream := !info.Created.After(at.made)
	if info.Config.Retention != jetstream.WorkQueuePolicy && sameStream {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, at.floor+1
	}
	return cfg
}
