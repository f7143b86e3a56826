package projection

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/voiceai-platform/voiceai/pkg/consume"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

// kept is a projection of ITEMS into items_kept that looks at its
// collection often, and the log it writes.
type kept struct {
	t    *testing.T
	js   jetstream.JetStream
	st   *eventstore.Store
	db   *mongo.Database
	coll *mongo.Collection
	cfg  Config
	log  *testkit.LogBuffer
}

func newKept(t *testing.T) *kept {
	js, st, db := setup(t)
	k := &kept{t: t, js: js, st: st, db: db, coll: db.Collection("items_kept"), log: &testkit.LogBuffer{}}
	k.cfg = Config{Stream: "ITEMS", Durable: "items-kept", FilterSubjects: []string{"items.>"}, CheckEvery: 50 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(k.log, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	k.index()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the projection's log:\n%s", k.log)
		}
	})
	return k
}

// index makes the index a service makes at start.
func (k *kept) index() {
	k.t.Helper()
	if _, err := k.coll.Indexes().CreateOne(context.Background(), mongo.IndexModel{
		Keys: bson.D{{Key: "name", Value: 1}}, Options: options.Index().SetName("by_name"),
	}); err != nil {
		k.t.Fatal(err)
	}
}

// run runs the projection until the returned stop is called.
func (k *kept) run() (stop func()) {
	return testkit.Background(k.t, func(ctx context.Context) error { return Run(ctx, k.js, k.coll, k.cfg, handler) })
}

// started appends versions of ten items and runs the projection until it
// has them; stop stops it.
func (k *kept) started() (stop func()) {
	appendItems(k.t, k.st, 10, 3)
	stop = k.run()
	k.caughtUp()
	k.whole("the projection caught up")
	return stop
}

// caughtUp waits for the durable to have everything.
func (k *kept) caughtUp() {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := WaitCaughtUp(ctx, k.js, "ITEMS", k.cfg.Durable); err != nil {
		k.t.Fatal(err)
	}
}

// whole waits for the collection to hold what a rebuild from the stream
// holds.
func (k *kept) whole(what string) {
	k.t.Helper()
	want := k.db.Collection(fmt.Sprintf("rebuilt_%d", time.Now().UnixNano()))
	if _, err := Rebuild(context.Background(), k.js, "ITEMS", []string{"items.>"}, want, handler); err != nil {
		k.t.Fatal(err)
	}
	testkit.Eventually(k.t, 30*time.Second, what, func() bool {
		return fmt.Sprint(all(k.t, k.coll)) == fmt.Sprint(all(k.t, want))
	})
}

func (k *kept) hasIndex() bool {
	specs, err := k.coll.Indexes().ListSpecifications(context.Background())
	if err != nil {
		k.t.Fatal(err)
	}
	for _, s := range specs {
		if s.Name == "by_name" {
			return true
		}
	}
	return false
}

func (k *kept) replays() int { return strings.Count(k.log.String(), "msg=\"replayed the stream") }

func TestACollectionDroppedUnderItsProjectorIsReplayed(t *testing.T) {
	for _, lose := range []struct {
		name string
		how  func(k *kept) error
	}{
		{"the collection dropped", func(k *kept) error { return k.coll.Drop(context.Background()) }},
		{"the database dropped, checkpoints and all", func(k *kept) error { return k.db.Drop(context.Background()) }},
	} {
		t.Run(lose.name, func(t *testing.T) {
			k := newKept(t)
			k.started()
			testkit.Eventually(t, 10*time.Second, "a first checkpoint", func() bool {
				return k.coll.Database().Collection(CheckpointsCollection).FindOne(context.Background(), bson.D{}).Err() == nil
			})

			if err := lose.how(k); err != nil {
				t.Fatal(err)
			}
			// A live write makes the collection again, with one item.
			appendItem(t, k.st, "item99", 1)
			k.whole("every item back after the drop")
			testkit.Eventually(t, 10*time.Second, "its index made again", k.hasIndex)
			// (Why it is replayed depends on when the projector looks: while
			// the collection is gone, once it is made again, or once the
			// store forgot it was ever there.)
			if !strings.Contains(k.log.String(), "replaying them into it") {
				t.Fatal("the replay not logged")
			}
		})
	}
}

// While writes are held (the disk nearly full), a collection found lost
// is not replayed into: the replay waits, as the durable does, and goes
// on once they are not.
func TestTheReplayOfALostCollectionHoldsWhileWritesAreHeld(t *testing.T) {
	k := newKept(t)
	var held atomic.Bool
	k.cfg.Hold = func() error {
		if held.Load() {
			return errors.New("disk nearly full")
		}
		return nil
	}
	k.started()
	testkit.Eventually(t, 10*time.Second, "a first checkpoint", func() bool {
		return k.coll.Database().Collection(CheckpointsCollection).FindOne(context.Background(), bson.D{}).Err() == nil
	})
	held.Store(true)
	if err := k.coll.Drop(context.Background()); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the replay holding", func() bool {
		return strings.Contains(k.log.String(), `msg="consumer holding its work" durable="items-kept (replay)"`)
	})
	if n, err := k.coll.CountDocuments(context.Background(), bson.D{}); err != nil || n != 0 {
		t.Fatalf("%d documents written into the lost collection while held (%v); want none", n, err)
	}
	held.Store(false)
	k.whole("every item back once writes are not held")
}

// A replay held longer than the server keeps its idle consumer (the disk
// full for minutes) goes on where it was once writes are not held: it
// neither fails nor starts again.
func TestAReplayHeldPastItsConsumersIdleLimitGoesOn(t *testing.T) {
	defer func(idle time.Duration) { replayIdle = idle }(replayIdle)
	replayIdle = time.Second
	k := newKept(t)
	stop := k.started()
	appendItems(t, k.st, replayBatch, 1) // more than one batch to replay
	k.caughtUp()
	var held atomic.Bool
	k.cfg.Hold = func() error {
		if held.Load() {
			return errors.New("disk nearly full")
		}
		return nil
	}
	stop()
	k.run() // with the hold
	held.Store(true)
	if err := k.coll.Drop(context.Background()); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the replay holding", func() bool {
		return strings.Contains(k.log.String(), `msg="consumer holding its work" durable="items-kept (replay)"`)
	})
	// The durable stays; the replay's consumer goes once idle.
	str, err := k.js.Stream(context.Background(), "ITEMS")
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "the replay's idle consumer gone", func() bool {
		info, err := str.Info(context.Background())
		return err == nil && info.State.Consumers == 1
	})
	held.Store(false)
	k.whole("every item back once writes are not held")
	if strings.Contains(k.log.String(), "level=ERROR") || k.replays() != 1 {
		t.Fatalf("the replay failed or started again (%d replays); want one, going on", k.replays())
	}
}

// Guard's first look, which a service's start waits for, does not wait
// for writes held: it leaves the replay to a later look, which makes it
// once they are not.
func TestTheFirstLookLeavesTheReplayToALaterOneWhileWritesAreHeld(t *testing.T) {
	k := newKept(t)
	k.started()() // run until caught up, then stopped
	var held atomic.Bool
	held.Store(true)
	k.cfg.Hold = func() error {
		if held.Load() {
			return errors.New("disk nearly full")
		}
		return nil
	}
	if err := k.coll.Drop(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stop atomic.Pointer[func()]
	go func() {
		s := Guard(ctx, k.js, k.coll, k.cfg, upserting(k.coll, handler))
		stop.Store(&s)
	}()
	testkit.Eventually(t, 10*time.Second, "the first look returned", func() bool { return stop.Load() != nil })
	defer func() { (*stop.Load())() }()
	if !strings.Contains(k.log.String(), "replaying them once writes are not held") {
		t.Fatal("the replay left for later not logged")
	}
	if n, err := k.coll.CountDocuments(context.Background(), bson.D{}); err != nil || n != 0 {
		t.Fatalf("%d documents written while held (%v); want none", n, err)
	}
	held.Store(false)
	k.whole("every item back once writes are not held")
}

// appendItem appends a version of item id.
func appendItem(t *testing.T, st *eventstore.Store, id string, count int) {
	t.Helper()
	ctx := context.Background()
	prev, _, err := st.Last(ctx, "items."+id)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(item{ID: id, Name: id, Count: count})
	if _, err := st.Append(ctx, "items."+id, prev.Seq, "", eventstore.Event{Type: "item", Data: data}); err != nil {
		t.Fatal(err)
	}
}

func TestProjectionsMendAtStartWhatTheirStoreLostWhileStopped(t *testing.T) {
	for _, lose := range []struct {
		name string
		how  func(k *kept)
	}{
		{"the collection dropped", func(k *kept) { _ = k.coll.Drop(context.Background()) }},
		// The service makes its indexes, and so its collections, before
		// its projectors start.
		{"the database dropped", func(k *kept) { _ = k.db.Drop(context.Background()); k.index() }},
		{"restored from an older backup, its UUID kept", func(k *kept) {
			// What a restore of the backup of the collection and its
			// checkpoint at seq 10 leaves: the items written after it lack
			// their later versions.
			ctx := context.Background()
			if _, err := k.coll.DeleteMany(ctx, bson.D{}); err != nil {
				k.t.Fatal(err)
			}
			k.setCheckpoint(10)
			if err := k.restoreUpTo(10); err != nil {
				k.t.Fatal(err)
			}
		}},
	} {
		t.Run(lose.name, func(t *testing.T) {
			k := newKept(t)
			k.started()()
			lose.how(k)
			k.run()
			k.whole("every item back")
			// (The items can be back before the replay has said so.)
			testkit.Eventually(t, 10*time.Second, "the replay done", func() bool { return k.replays() > 0 })
			if n := k.replays(); n != 1 {
				t.Fatalf("%d replays, want 1", n)
			}
		})
	}
}

// The streams moved to another cluster beside a fresh store: durables do
// not follow, their floors (kept in a bucket) do, so the durable is made
// again after its kept floor, and what lies below it must be replayed
// into the collection at start, or it never comes.
func TestAFreshStoreUnderADurableMadeAgainAfterItsKeptFloorIsReplayed(t *testing.T) {
	ctx := context.Background()
	k := newKept(t)
	stop := k.started()
	k.floorKept(30)
	stop()
	_ = k.db.Drop(ctx)
	k.index()
	if err := k.js.DeleteConsumer(ctx, "ITEMS", k.cfg.Durable); err != nil {
		t.Fatal(err)
	}
	k.run()
	k.whole("every item back")
}

// floorKept waits for the durable's acknowledgement floor to be kept in
// package consume's bucket at seq.
func (k *kept) floorKept(seq uint64) {
	k.t.Helper()
	ctx := context.Background()
	testkit.Eventually(k.t, 30*time.Second, "the durable's floor kept", func() bool {
		kv, err := k.js.KeyValue(ctx, consume.FloorsBucket)
		if err != nil {
			return false
		}
		e, err := kv.Get(ctx, consume.FloorKey("ITEMS", k.cfg.Durable))
		var at struct {
			Floor uint64 `json:"floor"`
		}
		return err == nil && json.Unmarshal(e.Value(), &at) == nil && at.Floor == seq
	})
}

// setCheckpoint sets the projection's checkpoint back to seq.
func (k *kept) setCheckpoint(seq int64) {
	k.t.Helper()
	r, err := k.db.Collection(CheckpointsCollection).UpdateOne(context.Background(), bson.D{{Key: "_id", Value: "ITEMS." + k.cfg.Durable}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "seq", Value: seq}}}})
	if err != nil || r.MatchedCount != 1 {
		k.t.Fatalf("setting the checkpoint back: %+v, %v", r, err)
	}
}

// restoreUpTo writes each item as the stream had it at sequence seq.
func (k *kept) restoreUpTo(seq uint64) error {
	_, _, err := replayUpTo(context.Background(), k.js, seq, k.coll)
	return err
}

func replayUpTo(ctx context.Context, js jetstream.JetStream, seq uint64, coll *mongo.Collection) (int, uint64, error) {
	upTo := func(ctx context.Context, rec eventstore.Record) (string, any, error) {
		if rec.Seq > seq {
			return "", nil, nil
		}
		return handler(ctx, rec)
	}
	return replay(ctx, js, "ITEMS", []string{"items.>"}, 1, upserting(coll, upTo))
}

// A stream made anew under a running projection (deleted and made again,
// or restored from an older backup: its sequences begin again at 1) has
// the collection cleared of the old stream's documents and hold the new
// stream's, though the old ones' sequences are higher than the new
// events' (the projector's writes of them were refused as older). A
// collection other streams' projectors write too is not cleared: that is
// said, at ERROR, once.
func TestAStreamMadeAnewUnderItsProjectionIsProjectedAnew(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			k := newKept(t)
			k.cfg.Shared = shared
			k.started()
			marks := k.coll.Database().Collection(CheckpointsCollection)
			testkit.Eventually(t, 10*time.Second, "the checkpoint at the durable's floor", func() bool {
				var c checkpoint
				return marks.FindOne(context.Background(), bson.D{}).Decode(&c) == nil && c.Seq == 30 && c.StreamMade != 0
			})
			ctx := context.Background()
			if err := k.js.DeleteStream(ctx, "ITEMS"); err != nil {
				t.Fatal(err)
			}
			testkit.Eventually(t, 10*time.Second, "the stream made anew", func() bool {
				_, err := eventstore.EnsureStream(ctx, k.js, eventstore.StreamConfig{Name: "ITEMS", Subjects: []string{"items.>"}})
				return err == nil
			})
			appendItems(t, k.st, 4, 1) // item00..item03 again, at their first version; the rest gone
			if shared {
				testkit.Eventually(t, 10*time.Second, "the stream made anew said", func() bool {
					return strings.Contains(k.log.String(), "level=ERROR msg=\"the stream was made anew")
				})
				k.caughtUp()
				if n := len(all(t, k.coll)); n != 10 || strings.Count(k.log.String(), "the stream was made anew") != 1 {
					t.Fatalf("a shared collection: %d documents (want the 10 it held), the stream made anew said %d times",
						n, strings.Count(k.log.String(), "the stream was made anew"))
				}
				return
			}
			k.whole("the new stream's items, and only them")
			if !strings.Contains(k.log.String(), "the stream was made anew") {
				t.Fatal("the clearing not logged")
			}
			testkit.Eventually(t, 10*time.Second, "the checkpoint at the new stream's sequence", func() bool {
				var c checkpoint
				return marks.FindOne(ctx, bson.D{}).Decode(&c) == nil && c.Seq == 4
			})
		})
	}
}

func TestACheckpointGoneBackWhileRunningIsReplayedFrom(t *testing.T) {
	k := newKept(t)
	k.started()
	marks := k.coll.Database().Collection(CheckpointsCollection)
	testkit.Eventually(t, 10*time.Second, "the checkpoint at the durable's floor", func() bool {
		var c checkpoint
		return marks.FindOne(context.Background(), bson.D{}).Decode(&c) == nil && c.Seq == 30
	})
	// A restore that keeps the collection's UUID: documents and
	// checkpoint as they were at sequence 10.
	ctx := context.Background()
	if _, err := k.coll.DeleteMany(ctx, bson.D{}); err != nil {
		t.Fatal(err)
	}
	if err := k.restoreUpTo(10); err != nil {
		t.Fatal(err)
	}
	k.setCheckpoint(10)
	k.whole("every item back after the restore")
	if !strings.Contains(k.log.String(), "from_seq=11") {
		t.Fatal("the replay did not start after the restored checkpoint")
	}
	// Replayed once: the checkpoint is raised again from where it was
	// found.
	testkit.Eventually(t, 10*time.Second, "the checkpoint raised again", func() bool {
		var c checkpoint
		return marks.FindOne(context.Background(), bson.D{}).Decode(&c) == nil && c.Seq == 30
	})
	if n := k.replays(); n != 1 {
		t.Fatalf("%d replays, want 1", n)
	}
}

func TestAProjectionRestartedOrUpgradedReplaysNothing(t *testing.T) {
	k := newKept(t)
	stop := k.started()
	stop()
	stop = k.run() // a clean restart: the last checkpoint is the durable's floor
	appendItems(t, k.st, 10, 1)
	k.caughtUp()
	k.whole("the new events projected")

	// A projection of a version that kept no checkpoints: its collection
	// whole, its durable ahead.
	stop()
	if _, err := k.coll.Database().Collection(CheckpointsCollection).DeleteMany(context.Background(), bson.D{}); err != nil {
		t.Fatal(err)
	}
	k.run()
	testkit.Eventually(t, 10*time.Second, "a checkpoint noted again", func() bool {
		return k.coll.Database().Collection(CheckpointsCollection).FindOne(context.Background(), bson.D{}).Err() == nil
	})
	if n := k.replays(); n != 0 {
		t.Fatalf("%d replays, want none:\n%s", n, k.log)
	}
}
