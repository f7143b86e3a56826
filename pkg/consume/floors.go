package consume

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/eventstore"
)

// The floors read while a durable is consumed (heal.go) are also kept in
// a key-value bucket, so that a durable found missing at start (deleted
// while no process consumed it: an operator's slip during maintenance, a
// move of the streams to another cluster, where durables do not follow)
// is made where it was, not from the stream's first message. A projector
// would only write its copy again; the webhook fan-out would queue every
// retained event again, for every webhook subscribed when it was stored.
// A durable never consumed (a first deployment, a new name for a read
// model to be built anew) has no floor kept and starts at the stream's
// first message as before.

// FloorsBucket is the key-value bucket of the durables' floors, one key
// per stream and durable (FloorKey). Deleting a durable's key along with
// the durable, while its consumers are stopped, has it start from the
// stream's first message again.
const FloorsBucket = "consumer_floors"

// FloorKey is the bucket's key of a stream's durable: stream and durable
// names are both valid key tokens.
func FloorKey(stream, durable string) string { return stream + "." + durable }

// savedPosition is a position as the bucket keeps it.
type savedPosition struct {
	Floor uint64 `json:"floor"`
	// Made is when the durable the floor is of was made: a stream made
	// after it is another one, numbered from 1 again.
	Made time.Time `json:"made"`
}

// floorBook writes a durable's floor to the bucket as it moves; a nil
// book keeps nothing. One book serves a consumption across the durables
// made again during it.
type floorBook struct {
	kv  *eventstore.KeptKeyValue
	key string
	// hold is the consumer's (Spec.Hold): a floor that has not moved is
	// not kept again while it holds, for the disk is nearly full.
	hold func() error

	mu      sync.Mutex
	saved   position
	savedAt time.Time
}

// keptAgainEvery is how often a floor that has not moved is kept again:
// the bucket, deleted and made again, has it back within this long.
var keptAgainEvery = func() *atomic.Int64 {
	var d atomic.Int64
	d.Store(int64(time.Minute))
	return &d
}()

// openFloors opens the bucket for s's durable (made, at its stream's
// replication, when it is not there). The bucket is a safeguard, not a
// dependency: when it cannot be had, nil, and the durable is made as
// before it.
func openFloors(ctx context.Context, js jetstream.JetStream, s Spec) *floorBook {
	kv, err := keptFloors(ctx, js, s)
	if err != nil {
		if ctx.Err() == nil {
			s.logger().Warn("the durables' floors cannot be kept; a durable deleted while none runs starts again from its stream's first message",
				"bucket", FloorsBucket, "durable", s.Durable, "err", err)
		}
		return nil
	}
	return &floorBook{kv: kv, key: FloorKey(s.Stream, s.Durable), hold: s.Hold}
}

// keptFloors opens the bucket, made at the replication of s's stream.
func keptFloors(ctx context.Context, js jetstream.JetStream, s Spec) (*eventstore.KeptKeyValue, error) {
	str, err := js.Stream(ctx, s.Stream)
	if err != nil {
		return nil, err
	}
	return eventstore.KeepKeyValue(ctx, js, jetstream.KeyValueConfig{
		Bucket:      FloorsBucket,
		Description: "Each durable consumer's acknowledgement floor as last read by its consumers: where one deleted while none ran is made again.",
		Storage:     jetstream.FileStorage,
		Replicas:    max(str.CachedInfo().Config.Replicas, 1),
		History:     1,
	}, s.Log)
}

// startOf is cfg, the durable about to be created or updated, made to
// start after its kept floor when the durable is missing but was consumed
// before (createAfter's rules: not in a work queue, not in a stream made
// anew). Any lookup that fails leaves cfg as it is.
func (b *floorBook) startOf(ctx context.Context, js jetstream.JetStream, s Spec, cfg jetstream.ConsumerConfig) jetstream.ConsumerConfig {
	if b == nil {
		return cfg
	}
	entry, err := b.kv.Get(ctx, b.key)
	if err != nil {
		return cfg // never consumed (or not to be told): from the start
	}
	at, ok := keptPosition(entry.Value())
	if !ok {
		return cfg
	}
	if _, err := js.Consumer(ctx, s.Stream, s.Durable); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return cfg // there (kept as it is), or not to be told
	}
	after, resumes, err := startAfter(ctx, js, s.Stream, cfg, at)
	if err != nil {
		return cfg
	}
	if resumes {
		s.logger().Warn("the durable consumer was missing at start; making it again after its last kept acknowledgement floor",
			"stream", s.Stream, "durable", s.Durable, "from_sequence", after.OptStartSeq)
	}
	return after
}

// KeptFloor is the floor after which a missing durable of stream would
// be made again (its kept floor, under startOf's rules), or 0 when it
// would start from the stream's first message: what a store's copy of
// the durable's events must already hold once it is made (package
// projection replays what the copy lacks of it).
func KeptFloor(ctx context.Context, js jetstream.JetStream, stream, durable string) (uint64, error) {
	kv, err := js.KeyValue(ctx, FloorsBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	entry, err := kv.Get(ctx, FloorKey(stream, durable))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	at, ok := keptPosition(entry.Value())
	if !ok {
		return 0, nil
	}
	_, resumes, err := startAfter(ctx, js, stream, jetstream.ConsumerConfig{}, at)
	if err != nil || !resumes {
		return 0, err
	}
	return at.floor, nil
}

// keptPosition is the position a floor kept in the bucket says; false
// when it says none (the durable then starts at the first message).
func keptPosition(value []byte) (position, bool) {
	var at savedPosition
	if json.Unmarshal(value, &at) != nil || at.Floor == 0 {
		return position{}, false
	}
	return position{floor: at.Floor, made: at.Made}, true
}

// startAfter is cfg made to start after at in stream (configAfter's
// rules), and whether it does so rather than at the first message.
func startAfter(ctx context.Context, js jetstream.JetStream, stream string, cfg jetstream.ConsumerConfig, at position) (jetstream.ConsumerConfig, bool, error) {
	str, err := js.Stream(ctx, stream)
	if err != nil {
		return cfg, false, err
	}
	after := configAfter(str.CachedInfo(), cfg, at)
	return after, after.DeliverPolicy == jetstream.DeliverByStartSequencePolicy, nil
}

// save keeps at when it moved since last kept, or was last kept
// keptAgainEvery ago and the consumer is not held. A failure is left for
// the next read to mend (the bucket, deleted, made again).
func (b *floorBook) save(ctx context.Context, at position) {
	if b == nil || at.floor == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if at.floor == b.saved.floor && at.made.Equal(b.saved.made) &&
		(time.Since(b.savedAt) < time.Duration(keptAgainEvery.Load()) || b.hold != nil && b.hold() != nil) {
		return
	}
	v, err := json.Marshal(savedPosition{Floor: at.floor, Made: at.made})
	if err != nil {
		return
	}
	if _, err := b.kv.Put(ctx, b.key, v); err != nil {
		b.kv.Heal(err)
		return
	}
	b.saved, b.savedAt = at, time.Now()
	floorsSaved.Add(1)
}
