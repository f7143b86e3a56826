package projection

import (
	"context"
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
//
// It reads the stream rather than consume it (pkg/consume): a bounded
// replay up to a known sequence, on an ordered consumer the server keeps
// no state for, with nothing to acknowledge or redeliver; a failure
// fails the rebuild, which is started again from the first event.
func Rebuild(ctx context.Context, js jetstream.JetStream, stream string, filterSubjects []string, coll *mongo.Collection, h Handler) (int, error) {
	str, err := js.Stream(ctx, stream)
	if err != nil {
		return 0, err
	}
	info, err := str.Info(ctx)
	if err != nil {
		return 0, err
	}
	last := info.State.LastSeq
	if info.State.Msgs == 0 {
		return 0, nil
	}
	cons, err := str.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: filterSubjects})
	if err != nil {
		return 0, err
	}
	applied := 0
	for {
		cinfo, err := cons.Info(ctx)
		if err != nil {
			return applied, err
		}
		if cinfo.NumPending == 0 {
			return applied, nil
		}
		batch, err := cons.Fetch(500, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return applied, err
		}
		for m := range batch.Messages() {
			rec, err := eventstore.RecordFromMsg(m)
			if err != nil {
				return applied, err
			}
			if rec.Seq > last {
				return applied, nil
			}
			id, doc, err := h(ctx, rec)
			if err != nil {
				return applied, fmt.Errorf("rebuild at seq %d: %w", rec.Seq, err)
			}
			if id == "" {
				continue
			}
			if _, err := Upsert(ctx, coll, id, rec.Seq, doc); err != nil {
				return applied, err
			}
			applied++
		}
		if err := batch.Error(); err != nil {
			return applied, err
		}
	}
}
