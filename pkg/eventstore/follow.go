package eventstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
)

// Follower keeps in-memory state current from a stream: it replays the
// stream (all of it, or the last event of each subject when events are
// state-carrying), then follows new events live.
type Follower struct {
	ready    chan struct{}
	done     atomic.Bool
	madeAnew atomic.Pointer[func()]
}

// WhenMadeAnew has fn called when the stream followed is found made anew
// (deleted and made again: a restore, a stream of passing work made
// again empty), before the follower applies the new stream's records from
// its start, and never while a record is being applied: state built from
// the old stream that the new one may not hold (a key restored without
// its last revocation, say) is dropped there.
func (f *Follower) WhenMadeAnew(fn func()) { f.madeAnew.Store(&fn) }

// Ready is closed once everything stored when Follow began was applied.
func (f *Follower) Ready() <-chan struct{} { return f.ready }

// Wait returns once the initial replay is applied, or ctx's error.
func (f *Follower) Wait(ctx context.Context) error {
	select {
	case <-f.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// IsReady reports whether the initial replay is complete.
func (f *Follower) IsReady() bool { return f.done.Load() }

func (f *Follower) markReady() {
	if f.done.CompareAndSwap(false, true) {
		close(f.ready)
	}
}

// Follow applies every record of stream matching filters to apply, in
// stream order, until ctx ends. lastPerSubject replays only each
// subject's newest event. It waits for the stream to exist, so services
// may start in any order.
//
// Following is reading, not consuming: an ordered consumer the server
// keeps no state for, nothing acknowledged, every process its own copy.
// Work that must be done once across replicas and survive a crash goes
// through a durable consumer instead (pkg/consume).
func Follow(ctx context.Context, js jetstream.JetStream, stream string, filters []string, lastPerSubject bool, apply func(Record)) (*Follower, error) {
	policy := jetstream.DeliverAllPolicy
	if lastPerSubject {
		policy = jetstream.DeliverLastPerSubjectPolicy
	}
	return follow(ctx, js, stream, jetstream.OrderedConsumerConfig{FilterSubjects: filters, DeliverPolicy: policy}, apply)
}

// FollowAfter is Follow (all records) from the record after seq: for a
// read model restored from a snapshot taken at seq.
func FollowAfter(ctx context.Context, js jetstream.JetStream, stream string, filters []string, seq uint64, apply func(Record)) (*Follower, error) {
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: filters, DeliverPolicy: jetstream.DeliverAllPolicy}
	if seq > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, seq+1
	}
	return follow(ctx, js, stream, cfg, apply)
}

// FollowFrom is Follow from a point in time: the records stored since
// then (a zero since: only those stored from now on), then new ones live.
// It is ready at once when nothing stored since then is left to apply.
func FollowFrom(ctx context.Context, js jetstream.JetStream, stream string, filters []string, since time.Time, apply func(Record)) (*Follower, error) {
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: filters, DeliverPolicy: jetstream.DeliverNewPolicy}
	if !since.IsZero() {
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &since
	}
	return follow(ctx, js, stream, cfg, apply)
}

func follow(ctx context.Context, js jetstream.JetStream, stream string, cfg jetstream.OrderedConsumerConfig, apply func(Record)) (*Follower, error) {
	str, err := WaitForStream(ctx, js, stream)
	if err != nil {
		return nil, err
	}
	f := &Follower{ready: make(chan struct{})}
	fl := &following{js: js, stream: stream, apply: apply, follower: f, suspect: make(chan struct{}, 1)}
	cc, err := fl.consume(ctx, str, cfg, true)
	if err != nil {
		return nil, err
	}
	go fl.watch(ctx, str.CachedInfo().Created, cfg, cc)
	return f, nil
}

// streamCheckEvery is how often a follower asks whether its stream is
// the one it began on, when nothing it was told made it ask sooner.
var streamCheckEvery = 30 * time.Second

// following is a follower's consumption of its stream, across the
// streams of that name: one deleted and made again (a stream of passing
// work its users make again, empty; a restore) numbers its records from 1
// again, where the client library's ordered consumer, reset, would wait
// for records after the last one it had seen, for good.
type following struct {
	js       jetstream.JetStream
	stream   string
	apply    func(Record)
	follower *Follower
	// suspect is signalled when the consumer reports an error that may
	// come of the stream being gone (its consumer deleted, no heartbeat).
	suspect chan struct{}

	mu  sync.Mutex
	gen int // the consumption whose records are applied
}

// consume follows str from cfg's start. first: the follower's first
// consumption, whose pending records make it ready once applied.
func (fl *following) consume(ctx context.Context, str jetstream.Stream, cfg jetstream.OrderedConsumerConfig, first bool) (jetstream.ConsumeContext, error) {
	// The stream may lose its leader between answering and these requests
	// (a process started as a partition heals): ask again, not exit.
	cons, err := UntilAvailable(ctx, "follower of "+fl.stream, func(ctx context.Context) (jetstream.Consumer, error) {
		return str.OrderedConsumer(ctx, cfg)
	})
	if err != nil {
		return nil, fmt.Errorf("follow %s: %w", fl.stream, err)
	}
	if first {
		info, err := UntilAvailable(ctx, "follower of "+fl.stream, cons.Info)
		if err != nil {
			return nil, fmt.Errorf("follow %s: %w", fl.stream, err)
		}
		if info.NumPending == 0 {
			fl.follower.markReady()
		}
	}
	fl.mu.Lock()
	gen := fl.gen
	fl.mu.Unlock()
	f := fl.follower
	return cons.Consume(func(m jetstream.Msg) {
		fl.mu.Lock()
		defer fl.mu.Unlock()
		if gen != fl.gen {
			return // of the stream before, stopped
		}
		meta, err := m.Metadata() // parsed once: a replay's every record asks what is pending
		if err != nil {
			return
		}
		fl.apply(recordWith(m, meta))
		if meta.NumPending == 0 && !f.IsReady() {
			f.markReady()
		}
	}, jetstream.ConsumeErrHandler(func(jetstream.ConsumeContext, error) {
		select {
		case fl.suspect <- struct{}{}:
		default:
		}
	}))
}

// watch follows the stream made anew from its first record (each
// subject's last, for a follower of those), once it finds the stream it
// follows was created after the one it began on. It asks when the
// consumer reported an error, again every second while the stream does
// not answer, and every streamCheckEvery besides.
func (fl *following) watch(ctx context.Context, created time.Time, cfg jetstream.OrderedConsumerConfig, cc jetstream.ConsumeContext) {
	check := time.NewTimer(streamCheckEvery)
	defer check.Stop()
	for {
		select {
		case <-ctx.Done():
			if cc != nil {
				cc.Stop()
			}
			return
		case <-fl.suspect:
		case <-check.C:
		}
		str, err := fl.js.Stream(ctx, fl.stream)
		if err != nil {
			check.Reset(time.Second) // gone, or not answering: look again soon
			continue
		}
		check.Reset(streamCheckEvery)
		if str.CachedInfo().Created.Equal(created) {
			continue
		}
		slog.Warn("the stream followed was made anew; following it from its start", "stream", fl.stream)
		if cc != nil {
			cc.Stop()
		}
		fl.mu.Lock()
		fl.gen++
		if fn := fl.follower.madeAnew.Load(); fn != nil {
			(*fn)()
		}
		fl.mu.Unlock()
		fresh := fromTheStart(cfg)
		next, err := fl.consume(ctx, str, fresh, false)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			slog.Error("the stream made anew is not followed yet; asking again", "stream", fl.stream, "err", err)
			check.Reset(time.Second)
			created, cc = time.Time{}, nil // not followed: any stream found is followed anew
			continue
		}
		created, cc = str.CachedInfo().Created, next
	}
}

// fromTheStart is cfg for a stream made anew: a start sequence was the
// old stream's.
func fromTheStart(cfg jetstream.OrderedConsumerConfig) jetstream.OrderedConsumerConfig {
	if cfg.DeliverPolicy == jetstream.DeliverByStartSequencePolicy {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverAllPolicy, 0
	}
	return cfg
}

// WaitForStream returns the stream once it exists and answers, polling
// until ctx ends: a stream not created yet, or without a leader yet (a new
// replicated stream, a cluster between leaders), is asked again.
func WaitForStream(ctx context.Context, js jetstream.JetStream, name string) (jetstream.Stream, error) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		actx, cancel := context.WithTimeout(ctx, time.Second)
		s, err := js.Stream(actx, name)
		cancel()
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, jetstream.ErrStreamNotFound) && !eventlog.IsUnavailable(Classify(err)) {
			return nil, fmt.Errorf("stream %s: %w", name, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("stream %s never appeared: %w", name, ctx.Err())
		case <-t.C:
		}
	}
}
