package projection

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/voiceai-platform/voiceai/pkg/consume"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
)

// Handler maps a record to the document its state becomes; an empty id
// skips the record.
type Handler func(ctx context.Context, rec eventstore.Record) (id string, doc any, err error)

// Config names the durable consumer of a projection.
type Config struct {
	Stream         string
	Durable        string
	FilterSubjects []string
	AckWait        time.Duration // default 30s
	MaxDeliver     int           // default unlimited: a read model must not skip events
	Logger         *slog.Logger
	// Linger, when set, holds a batch open this long after its first
	// message so that more join it, up to MaxBatch. For a durable copy
	// that no request reads at once (the tickets store behind an in-memory
	// index): few large store writes cost far less than many small ones.
	Linger   time.Duration
	MaxBatch int // default 256
	// CheckEvery is how often the collection is looked at for what it
	// lost (Guard); default 10s.
	CheckEvery time.Duration
	// Hold, when set, holds the projection's writes while it says why
	// not (consume.Spec.Hold): the durable's and a replay's (Guard).
	Hold func() error
	// Shared says the collection has projectors of other streams too,
	// each writing fields of its own: its stream made anew, the
	// collection cannot be cleared of what came from it alone, so Guard
	// only says so, at ERROR, for a rebuild.
	Shared bool
}

// Run projects the stream into coll through a durable consumer until ctx
// ends. Each record is written, then acked; a failed write is retried
// with back-off, so nothing is skipped. Restarting resumes where the
// durable consumer left off. What the collection loses behind the
// durable's back (dropped, restored from an older backup) is replayed
// into it: before the durable is consumed, and while it is (Guard).
func Run(ctx context.Context, js jetstream.JetStream, coll *mongo.Collection, c Config, h Handler) error {
	return RunApply(ctx, js, coll, c, upserting(coll, h))
}

// RunApply is Run for a projection whose records are written by apply
// rather than upserted as the states a Handler maps them to (several
// projections sharing one collection, each writing its own fields):
// apply is guarded by the same checkpoints, and replays what coll lost.
func RunApply(ctx context.Context, js jetstream.JetStream, coll *mongo.Collection, c Config, apply Apply) error {
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = defaultMaxBatch
	}
	stop := Guard(ctx, js, coll, c, apply)
	defer stop()
	// Whatever has arrived is one batch (without a linger, no waiting: an
	// idle projector writes at once, a busy one in batches).
	return consume.Batches(ctx, js, consume.Spec{
		Stream: c.Stream, Durable: c.Durable, FilterSubjects: c.FilterSubjects, AckWait: c.AckWait, MaxDeliver: c.MaxDeliver,
		MaxBatch: c.MaxBatch, MaxAckPending: max(1000, 2*c.MaxBatch), Linger: c.Linger, Log: log, Hold: c.Hold,
		OnError: func(batch []jetstream.Msg, err error) {
			log.Error("projection write failed; will retry", "projection", c.Durable, "messages", len(batch), "err", err)
		},
	}, func(ctx context.Context, batch []jetstream.Msg) error { return applyBatch(ctx, apply, batch) })
}

// UnreadCopy tunes c for a durable copy no request reads at once (the
// store behind an in-memory index): batches linger 250 ms to reach up to
// 1,000 writes, since few large store writes cost far less than many small
// ones.
func (c Config) UnreadCopy() Config {
	c.Linger, c.MaxBatch = 250*time.Millisecond, 1000
	return c
}

// defaultMaxBatch bounds the messages written as one batch.
const defaultMaxBatch = 256

// applyBatch writes the batch's records through apply.
func applyBatch(ctx context.Context, apply Apply, batch []jetstream.Msg) error {
	recs := make([]eventstore.Record, 0, len(batch))
	for _, m := range batch {
		rec, err := eventstore.RecordFromMsg(m)
		if err != nil {
			return err
		}
		recs = append(recs, rec)
	}
	_, err := apply(ctx, recs)
	return err
}

// WaitCaughtUp returns once the durable consumer has processed and acked
// everything in its stream, polling until ctx ends.
//
// No pending messages is not enough on its own: a consumer whose info is
// read while it is being created (before it leads) reports none pending
// and none delivered. So the last message its filter matches must also
// have been delivered.
func WaitCaughtUp(ctx context.Context, js jetstream.JetStream, stream, durable string) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		done, err := caughtUp(ctx, js, stream, durable)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("projection %s not caught up: %w", durable, ctx.Err())
		case <-t.C:
		}
	}
}

func caughtUp(ctx context.Context, js jetstream.JetStream, stream, durable string) (bool, error) {
	cons, err := js.Consumer(ctx, stream, durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	info, err := cons.Info(ctx)
	if err != nil || info.NumPending != 0 || info.NumAckPending != 0 {
		return false, nil
	}
	last, err := lastMatching(ctx, js, stream, info.Config)
	if err != nil {
		return false, err
	}
	return info.Delivered.Stream >= last, nil
}

// lastMatching is the sequence of the stream's last message the consumer's
// filter matches (0 when there is none).
func lastMatching(ctx context.Context, js jetstream.JetStream, stream string, c jetstream.ConsumerConfig) (uint64, error) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return 0, err
	}
	filters := c.FilterSubjects
	if c.FilterSubject != "" {
		filters = append(filters, c.FilterSubject)
	}
	if len(filters) == 0 {
		filters = []string{">"}
	}
	var last uint64
	for _, f := range filters {
		m, err := s.GetLastMsgForSubject(ctx, f)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return 0, err
		}
		last = max(last, m.Sequence)
	}
	return last, nil
}

// Start runs Run in the background for the life of ctx, logging if the
// projector stops for any reason other than ctx ending.
func Start(ctx context.Context, js jetstream.JetStream, coll *mongo.Collection, c Config, h Handler) {
	go func() {
		if err := Run(ctx, js, coll, c, h); err != nil && ctx.Err() == nil && c.Logger != nil {
			c.Logger.Error("projector stopped", "projection", c.Durable, "err", err)
		}
	}()
}
