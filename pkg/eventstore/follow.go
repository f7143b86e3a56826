package eventstore

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
)

// Follower keeps in-memory state current from a stream: it replays the
// stream (all of it, or the last event of each subject when events are
// state-carrying), then follows new events live.
type Follower struct {
	ready chan struct{}
	done  atomic.Bool
}

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
	// The stream may lose its leader between answering and these requests
	// (a process started as a partition heals): ask again, not exit.
	cons, err := untilAvailable(ctx, "follower of "+stream, func(ctx context.Context) (jetstream.Consumer, error) {
		return str.OrderedConsumer(ctx, cfg)
	})
	if err != nil {
		return nil, fmt.Errorf("follow %s: %w", stream, err)
	}
	f := &Follower{ready: make(chan struct{})}
	info, err := untilAvailable(ctx, "follower of "+stream, cons.Info)
	if err != nil {
		return nil, fmt.Errorf("follow %s: %w", stream, err)
	}
	if info.NumPending == 0 {
		f.markReady()
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		if rec, err := RecordFromMsg(m); err == nil {
			apply(rec)
		}
		if !f.IsReady() {
			if meta, err := m.Metadata(); err == nil && meta.NumPending == 0 {
				f.markReady()
			}
		}
	})
	if err != nil {
		return nil, err
	}
	go func() { <-ctx.Done(); cc.Stop() }()
	return f, nil
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
