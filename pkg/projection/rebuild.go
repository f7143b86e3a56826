package projection

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/voiceai-platform/voiceai/pkg/eventstore"
)

// Rebuild replays the stream from its first event into coll (a fresh
// collection) and returns once it has applied everything up to the
// stream's last sequence as of the call. A service switches its reads to
// the rebuilt collection afterwards; the old one can then be dropped.
func Rebuild(ctx context.Context, js jetstream.JetStream, stream string, filterSubjects []string, coll *mongo.Collection, h Handler) (int, error) {
	applied, _, err := replay(ctx, js, stream, filterSubjects, 1, upserting(coll, h))
	return applied, err
}

// Apply writes a batch of a stream's records into a store's collection
// and says how many it wrote. Applied again to records it has written,
// it must leave the collection as it was.
type Apply func(ctx context.Context, recs []eventstore.Record) (applied int, err error)

// EachRecord is the Apply of a projection that writes one record at a
// time through write, which must leave the collection as it was when
// given a record it has written.
func EachRecord(write func(ctx context.Context, rec eventstore.Record) error) Apply {
	return func(ctx context.Context, recs []eventstore.Record) (int, error) {
		for i, rec := range recs {
			if err := write(ctx, rec); err != nil {
				return i, fmt.Errorf("at seq %d: %w", rec.Seq, err)
			}
		}
		return len(recs), nil
	}
}

// upserting is the Apply of a projection: each record mapped by h,
// written by UpsertBatch.
func upserting(coll *mongo.Collection, h Handler) Apply {
	return func(ctx context.Context, recs []eventstore.Record) (int, error) {
		writes := make([]Write, 0, len(recs))
		for _, rec := range recs {
			id, doc, err := h(ctx, rec)
			if err != nil {
				return 0, fmt.Errorf("at seq %d: %w", rec.Seq, err)
			}
			if id != "" {
				writes = append(writes, Write{ID: id, Seq: rec.Seq, Doc: doc})
			}
		}
		return len(writes), UpsertBatch(ctx, coll, writes)
	}
}

// replayBatch bounds the records a replay reads and writes at once.
const replayBatch = 500

// replayIdle is how long the server keeps a replay's consumer without a
// fetch (the client library's default for an ordered consumer): a replay
// held longer (its writes held while the disk is nearly full) finds it
// gone, and makes it again where it was.
var replayIdle = 5 * time.Minute

// replay applies the stream's records from sequence from on, up to the
// stream's last as of the call, and returns how many it applied and that
// last sequence. A projection's writes are guarded by their sequence, so
// a replay may run beside the live projector, over what its collection
// already holds.
//
// It reads the stream rather than consume it (pkg/consume): a bounded
// replay up to a known sequence, on an ordered consumer the server keeps
// no state for, with nothing to acknowledge or redeliver; a failure
// fails the replay, which is started again.
func replay(ctx context.Context, js jetstream.JetStream, stream string, filterSubjects []string, from uint64, apply Apply) (applied int, last uint64, err error) {
	str, err := js.Stream(ctx, stream)
	if err != nil {
		return 0, 0, err
	}
	info, err := str.Info(ctx)
	if err != nil {
		return 0, 0, err
	}
	last = info.State.LastSeq
	if info.State.Msgs == 0 || from > last {
		return 0, last, nil
	}
	cons, err := str.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: filterSubjects, DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: max(from, 1),
		InactiveThreshold: replayIdle,
	})
	if err != nil {
		return 0, last, err
	}
	// seen is the newest record read: at last, the replay is done.
	for seen := uint64(0); seen < last; {
		pending := uint64(1) // unknown: a fetch of one makes the consumer again
		switch cinfo, err := cons.Info(ctx); {
		case errors.Is(err, jetstream.ErrConsumerNotFound):
			// Idle past replayIdle while held: an ordered consumer's
			// fetch makes it again after the last record it handed over.
		case err != nil:
			return applied, last, err
		case cinfo.NumPending == 0:
			return applied, last, nil
		default:
			pending = cinfo.NumPending
		}
		// As many as are there: a fetch of more waits out its time.
		batch, err := cons.Fetch(int(min(pending, replayBatch)), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return applied, last, err
		}
		recs := make([]eventstore.Record, 0, replayBatch)
		for m := range batch.Messages() {
			rec, err := eventstore.RecordFromMsg(m)
			if err != nil {
				return applied, last, err
			}
			seen = max(seen, rec.Seq)
			if rec.Seq > last {
				continue // drained, so that the fetch ends cleanly
			}
			recs = append(recs, rec)
		}
		if err := batch.Error(); err != nil {
			return applied, last, err
		}
		n, err := apply(ctx, recs)
		applied += n
		if err != nil {
			return applied, last, fmt.Errorf("replay: %w", err)
		}
	}
	return applied, last, nil
}
