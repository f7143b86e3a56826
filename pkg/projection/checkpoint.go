package projection

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/voiceai-platform/voiceai/pkg/consume"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
)

// A projection's collection can lose what its projector wrote while the
// durable consumer's floor stays ahead: the collection or its database
// dropped by hand, the database restored from an older backup. Nothing
// in the stream says so, and the read model would stay short for good.
// So each projection notes, in its database's CheckpointsCollection,
// which collection (by its UUID, which a drop or a restore changes) it
// has written up to which sequence; it looks at start and every
// Config.CheckEvery, and when the collection holds less than was written
// to it, replays the stream into it from where what it holds ends.

// CheckpointsCollection is where a database's projections note what
// their collections hold.
const CheckpointsCollection = "projection_checkpoints"

// defaultCheckEvery is how often a running projection looks at its
// collection: how long a dropped one stays short at most, besides its
// replay.
const defaultCheckEvery = 10 * time.Second

// lookTimeout bounds a look at the collection, and the note after it: a
// store that does not answer must not hold a projector at start.
const lookTimeout = 30 * time.Second

// checkpoint says that collection UUID holds every event of the
// projection up to Seq.
type checkpoint struct {
	ID         string      `bson:"_id"` // stream.durable
	Collection string      `bson:"collection"`
	UUID       bson.Binary `bson:"uuid"`
	Seq        int64       `bson:"seq"`
	At         time.Time   `bson:"at"`
	// StreamMade is when the stream written from was made (Unix
	// nanoseconds: a stored date keeps milliseconds): one made later is
	// another stream (restored from an older backup, or deleted and made
	// again), numbered from 1 again. Zero in a checkpoint noted before it
	// was kept.
	StreamMade int64 `bson:"stream_made,omitempty"`
}

// keeper looks after one projection's collection. The fields after the
// blank line are read and written by one goroutine at a time: Run's, at
// start, then keep's.
type keeper struct {
	js    jetstream.JetStream
	c     Config
	coll  *mongo.Collection
	marks *mongo.Collection
	apply Apply
	log   *slog.Logger

	seen     []byte     // the collection's UUID when it was last found whole
	indexes  []bson.Raw // its indexes then, made again if it is dropped
	noted    uint64     // the sequence last noted
	made     time.Time  // when the stream the collection holds was made, as notes say
	madeAnew time.Time  // when the stream was made anew, while the collection is not cleared yet
	anew     bool       // the collection was cleared for a stream made anew: the next note sets its sequence
}

// Guard looks after coll, which durable c.Durable of c.Stream writes
// through apply: now, before the durable is consumed, then every
// c.CheckEvery until stop is called or ctx ends. What coll is found to
// lack is replayed into it through apply. Run guards its collection; a
// consumer that writes a store's collection otherwise guards it itself.
func Guard(ctx context.Context, js jetstream.JetStream, coll *mongo.Collection, c Config, apply Apply) (stop func()) {
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	k := &keeper{js: js, c: c, coll: coll, marks: coll.Database().Collection(CheckpointsCollection), apply: apply, log: log}
	k.check(ctx, false)
	kctx, cancel := context.WithCancel(ctx)
	kept := make(chan struct{})
	go func() {
		defer close(kept)
		k.keep(kctx)
	}()
	return func() {
		cancel()
		<-kept
	}
}

// id names the projection's checkpoint: its durable's stream and name.
func (k *keeper) id() string { return k.c.Stream + "." + k.c.Durable }

// keep looks at the collection every CheckEvery until ctx ends, then
// notes what the durable has acknowledged, so that a clean restart finds
// nothing to replay.
func (k *keeper) keep(ctx context.Context) {
	every := k.c.CheckEvery
	if every <= 0 {
		every = defaultCheckEvery
	}
	// The first look at a random point of the interval: a service's
	// projectors start together, and their looks at once would be a burst
	// of store reads every interval.
	t := time.NewTimer(time.Duration(rand.Int64N(int64(every))))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			if floor, err := k.floor(stop); err == nil && k.seen != nil && floor > k.noted {
				_ = k.note(stop, k.seen, floor)
			}
			return
		case <-t.C:
			k.check(ctx, true)
			t.Reset(every)
		}
	}
}

// check looks at the collection, replays what it lacks, and notes what it
// holds. A failure is tried again at the next look. A replay waits while
// writes are held, unless mayWait is false (Guard's first look, which its
// caller's start waits for): it is then left to a later look.
func (k *keeper) check(ctx context.Context, mayWait bool) {
	lctx, cancel := context.WithTimeout(ctx, lookTimeout)
	defer cancel()
	uuid, missing, err := k.look(lctx)
	if err != nil {
		k.log.Debug("could not look at the projection's collection", "projection", k.c.Durable, "err", err)
		return
	}
	covered := uint64(0)
	if missing.from > 0 {
		if held := k.held(); held != nil && !mayWait {
			k.log.Info("the projection's collection lacks events of its stream; replaying them once writes are not held",
				"projection", k.c.Durable, "collection", k.coll.Name(), "reason", held)
			return
		}
		if uuid, covered, err = k.mend(ctx, missing); err != nil {
			k.log.Error("replaying the stream into the projection's collection failed; will try again", "projection", k.c.Durable,
				"collection", k.coll.Name(), "err", err)
			return
		}
		// What the collection held was found to end at from-1: the note
		// raises the checkpoint from there.
		k.noted = missing.from - 1
	}
	rctx, cancel := context.WithTimeout(ctx, lookTimeout)
	defer cancel()
	if err := k.remember(rctx, uuid, covered); err != nil {
		k.log.Debug("could not note the projection's checkpoint", "projection", k.c.Durable, "err", err)
	}
}

// held is why writes are held now, or nil.
func (k *keeper) held() error {
	if k.c.Hold == nil {
		return nil
	}
	return k.c.Hold()
}

// lack is what a look found the collection lacks: the events from
// sequence from on (none when 0), why, and whether they surely were
// written to it (or perhaps never were: a warning or a note).
type lack struct {
	from  uint64
	why   string
	level slog.Level
	anew  bool // the stream was made anew: what the collection holds is of another one
}

// look decides whether the collection (uuid, as found) lacks events its
// projector wrote.
func (k *keeper) look(ctx context.Context) (uuid []byte, _ lack, err error) {
	if uuid, err = k.uuid(ctx); err != nil {
		return nil, lack{}, err
	}
	made, err := k.streamMade(ctx)
	if err != nil {
		return nil, lack{}, err
	}
	var mark checkpoint
	err = k.marks.FindOne(ctx, bson.D{{Key: "_id", Value: k.id()}}).Decode(&mark)
	found := err == nil
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		return nil, lack{}, err
	}
	switch {
	case found && mark.StreamMade != 0 && made.UnixNano() > mark.StreamMade:
		// Its documents carry the old stream's sequences, above the new
		// one's: the projector's writes of the new events would be
		// refused as older, and what the new stream lacks would stay.
		if k.c.Shared {
			// Said once: the checkpoint takes the new stream's time.
			if _, err := k.marks.UpdateOne(ctx, bson.D{{Key: "_id", Value: k.id()}},
				bson.D{{Key: "$set", Value: bson.D{{Key: "stream_made", Value: made.UnixNano()}}}}); err != nil {
				return nil, lack{}, err
			}
			k.made = made
			k.log.Error("the stream was made anew (restored from an older backup, or deleted and made again) under a collection other streams' projectors write too: what it holds of the stream before stays until the collection is rebuilt",
				"projection", k.c.Durable, "collection", k.coll.Name(), "stream", k.c.Stream)
			return uuid, lack{}, nil
		}
		// Noted as the stream's time once cleared (mend), not before: a
		// note meanwhile would have the next look find nothing amiss.
		k.madeAnew = made
		return uuid, lack{1, "the stream was made anew (restored from an older backup, or deleted and made again): what the collection holds of the stream before is cleared",
			slog.LevelWarn, true}, nil
	}
	k.made = made
	switch {
	case k.seen != nil && !bytes.Equal(uuid, k.seen):
		return uuid, lack{1, "the collection was dropped", slog.LevelWarn, false}, nil
	case found && uuid != nil && bytes.Equal(mark.UUID.Data, uuid):
		// The collection written; does it hold all it was said to?
		if k.seen == nil { // at start
			floor, err := k.floor(ctx)
			if err != nil {
				return nil, lack{}, err
			}
			if uint64(mark.Seq) < floor {
				return uuid, lack{uint64(mark.Seq) + 1, "the collection's checkpoint is behind what its durable acknowledged (a crash, or a restore)", slog.LevelInfo, false}, nil
			}
			return uuid, lack{}, nil
		}
		if uint64(mark.Seq) < k.noted {
			return uuid, lack{uint64(mark.Seq) + 1, "the collection's checkpoint went back (restored from a backup?)", slog.LevelWarn, false}, nil
		}
		return uuid, lack{}, nil
	case found:
		return uuid, lack{1, "the collection is not the one its projector wrote (dropped, or restored from a backup)", slog.LevelWarn, false}, nil
	}
	// No checkpoint: a projection that never noted one (a first start, or
	// one of a version before checkpoints), or a database dropped whole.
	// An empty collection behind a durable that has acknowledged events
	// is likely the latter; replayed, it costs a read of the stream if it
	// is not.
	floor, err := k.floor(ctx)
	if err != nil {
		return nil, lack{}, err
	}
	if floor == 0 {
		return uuid, lack{}, nil
	}
	empty := uuid == nil
	if !empty {
		err := k.coll.FindOne(ctx, bson.D{}, options.FindOne().SetProjection(bson.D{{Key: "_id", Value: 1}})).Err()
		if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
			return nil, lack{}, err
		}
		empty = errors.Is(err, mongo.ErrNoDocuments)
	}
	if empty {
		return uuid, lack{1, "no checkpoint, and the collection is empty while its durable has acknowledged events (its database dropped, or nothing was written to it yet)", slog.LevelInfo, false}, nil
	}
	return uuid, lack{}, nil
}

// mend replays the stream into the collection from where it lacks, and
// returns the collection's UUID and the sequence up to which it then
// holds every event.
func (k *keeper) mend(ctx context.Context, l lack) ([]byte, uint64, error) {
	log := k.log.With("projection", k.c.Durable, "collection", k.coll.Name(), "from_seq", l.from)
	log.Log(ctx, l.level, "the projection's collection lacks events of its stream; replaying them into it", "why", l.why)
	start := time.Now()
	if err := k.prepare(ctx); err != nil {
		return nil, 0, err
	}
	if l.anew {
		// The projector may write the new stream's events meanwhile:
		// those cleared with the rest are written again by the replay.
		if _, err := k.coll.DeleteMany(ctx, bson.D{}); err != nil {
			return nil, 0, err
		}
		k.noted, k.anew, k.made = 0, true, k.madeAnew
	}
	uuid, err := k.uuid(ctx)
	if err != nil {
		return nil, 0, err
	}
	// The replay writes as the durable does, so it holds as the durable
	// does (the disk nearly full): between batches.
	apply := func(ctx context.Context, recs []eventstore.Record) (int, error) {
		if !consume.WaitWhileHeld(ctx, k.c.Hold, k.log, k.c.Durable+" (replay)") {
			return 0, ctx.Err()
		}
		return k.apply(ctx, recs)
	}
	n, last, err := replay(ctx, k.js, k.c.Stream, k.c.FilterSubjects, l.from, apply)
	if err != nil {
		return nil, 0, err
	}
	log.Info("replayed the stream into the projection's collection", "applied", n, "to_seq", last, "took", time.Since(start))
	return uuid, last, nil
}

// prepare makes the collection, with the indexes it had when last found
// whole, if it was dropped: a projector's write would make it, but bare.
func (k *keeper) prepare(ctx context.Context) error {
	for _, spec := range k.indexes {
		if err := k.coll.Database().RunCommand(ctx, bson.D{
			{Key: "createIndexes", Value: k.coll.Name()}, {Key: "indexes", Value: bson.A{spec}},
		}).Err(); err != nil {
			return fmt.Errorf("making index %s again: %w", spec.Lookup("name"), err)
		}
	}
	err := k.coll.Database().CreateCollection(ctx, k.coll.Name())
	var cmdErr mongo.CommandError
	if errors.As(err, &cmdErr) && cmdErr.HasErrorCode(namespaceExists) {
		return nil
	}
	return err
}

// namespaceExists is the server's code for a collection made twice.
const namespaceExists = 48

// remember notes that collection uuid holds every event up to the
// durable's floor, or to covered if a replay took it further, and keeps
// its UUID and indexes; unless it is no longer the collection there
// (dropped since it was looked at), which the next look finds. A
// checkpoint with nothing new is not written again.
func (k *keeper) remember(ctx context.Context, uuid []byte, covered uint64) error {
	if uuid == nil {
		return nil // nothing written yet: nothing to note
	}
	floor, err := k.floor(ctx)
	if err != nil {
		return err
	}
	seq, same := max(floor, covered), bytes.Equal(uuid, k.seen)
	if same && seq <= k.noted {
		return nil
	}
	indexes := k.indexes
	if !same {
		if indexes, err = k.indexSpecs(ctx); err != nil {
			return err
		}
	}
	if now, err := k.uuid(ctx); err != nil || !bytes.Equal(now, uuid) {
		return errors.Join(err, errNotTheOneLookedAt)
	}
	if err := k.note(ctx, uuid, seq); err != nil {
		return err
	}
	k.seen, k.indexes = uuid, indexes
	return nil
}

// errNotTheOneLookedAt is a note not written: the collection changed
// since it was looked at.
var errNotTheOneLookedAt = errors.New("the collection is not the one looked at; the next look decides")

// note records that collection uuid holds every event up to seq. The
// sequence only grows ($max): replicas of a service note the same
// projection, each what it last read of the durable. Nor does a note
// raise a checkpoint that went back below what this process noted last
// (a restore): the next look replays from it.
//
// A note after the collection was cleared for a stream made anew sets the
// sequence, the old stream's being higher, and the stream's making time.
func (k *keeper) note(ctx context.Context, uuid []byte, seq uint64) error {
	filter := bson.D{{Key: "_id", Value: k.id()}, {Key: "seq", Value: bson.D{{Key: "$gte", Value: int64(k.noted)}}}}
	set := bson.D{
		{Key: "collection", Value: k.coll.Name()},
		{Key: "uuid", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: uuid}},
		{Key: "at", Value: time.Now().UTC()},
	}
	if !k.made.IsZero() {
		set = append(set, bson.E{Key: "stream_made", Value: k.made.UnixNano()})
	}
	update := bson.D{{Key: "$set", Value: set}, {Key: "$max", Value: bson.D{{Key: "seq", Value: int64(seq)}}}}
	if k.anew {
		filter = filter[:1]
		update = bson.D{{Key: "$set", Value: append(set, bson.E{Key: "seq", Value: int64(seq)})}}
	}
	_, err := k.marks.UpdateOne(ctx, filter, update, options.UpdateOne().SetUpsert(true))
	if mongo.IsDuplicateKeyError(err) {
		return errors.New("the checkpoint went back; the next look replays from it")
	}
	if err == nil {
		k.noted, k.anew = max(k.noted, seq), false
	}
	return err
}

// streamMade is when the stream was made.
func (k *keeper) streamMade(ctx context.Context) (time.Time, error) {
	str, err := k.js.Stream(ctx, k.c.Stream)
	if err != nil {
		return time.Time{}, err
	}
	return str.CachedInfo().Created, nil
}

// uuid is the collection's UUID, nil when it does not exist.
func (k *keeper) uuid(ctx context.Context) ([]byte, error) {
	specs, err := k.coll.Database().ListCollectionSpecifications(ctx, bson.D{{Key: "name", Value: k.coll.Name()}})
	if err != nil || len(specs) == 0 || specs[0].UUID == nil {
		return nil, err
	}
	return specs[0].UUID.Data, nil
}

// indexSpecs are the collection's indexes but _id's, as createIndexes
// takes them.
func (k *keeper) indexSpecs(ctx context.Context) ([]bson.Raw, error) {
	cur, err := k.coll.Indexes().List(ctx)
	if err != nil {
		return nil, err
	}
	var out []bson.Raw
	for cur.Next(ctx) {
		if name, _ := cur.Current.Lookup("name").StringValueOK(); name == "_id_" {
			continue
		}
		elems, err := cur.Current.Elements()
		if err != nil {
			return nil, err
		}
		spec := bson.D{}
		for _, e := range elems {
			// The command names the collection (newer servers refuse
			// ns), and the server picks the version (FerretDB refuses v).
			if k := e.Key(); k != "ns" && k != "v" {
				spec = append(spec, bson.E{Key: k, Value: e.Value()})
			}
		}
		raw, err := bson.Marshal(spec)
		if err != nil {
			return nil, err
		}
		out = append(out, raw)
	}
	return out, errors.Join(cur.Err(), cur.Close(ctx))
}

// floor is the last sequence the durable has acknowledged, and so written
// to the collection. While the durable does not exist, it is the floor it
// will be made again after (consume.KeptFloor: the streams moved to
// another cluster, where durables do not follow), 0 when it will start
// from the stream's first message.
func (k *keeper) floor(ctx context.Context) (uint64, error) {
	// On a fresh cluster a request about a stream still electing its
	// leader (the floors bucket another process has just made) goes
	// unanswered, and held a service's start for the whole look (30 s):
	// asked again with a short deadline, it is answered once the election
	// is over.
	return eventstore.UntilAvailable(ctx, "the floor of "+k.c.Durable, k.floorOnce)
}

func (k *keeper) floorOnce(ctx context.Context) (uint64, error) {
	cons, err := k.js.Consumer(ctx, k.c.Stream, k.c.Durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return consume.KeptFloor(ctx, k.js, k.c.Stream, k.c.Durable)
	}
	if err != nil {
		return 0, err
	}
	info, err := cons.Info(ctx)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return consume.KeptFloor(ctx, k.js, k.c.Stream, k.c.Durable)
	}
	if err != nil {
		return 0, err
	}
	return info.AckFloor.Stream, nil
}
