package projection

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
)

type item struct {
	ID    string `json:"id" bson:"-"`
	Name  string `json:"name" bson:"name"`
	Count int    `json:"count" bson:"count"`
}

type storedItem struct {
	ID      string `bson:"_id"`
	LastSeq int64  `bson:"last_seq"`
	Name    string `bson:"name"`
	Count   int    `bson:"count"`
}

func handler(_ context.Context, rec eventstore.Record) (string, any, error) {
	var it item
	if err := json.Unmarshal(rec.Data, &it); err != nil {
		return "", nil, err
	}
	return it.ID, it, nil
}

func setup(t *testing.T) (jetstream.JetStream, *eventstore.Store, *mongo.Database) {
	t.Helper()
	env := testenv.New(t)
	js, err := jetstream.New(env.Conn(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eventstore.EnsureStream(context.Background(), js, eventstore.StreamConfig{Name: "ITEMS", Subjects: []string{"items.>"}}); err != nil {
		t.Fatal(err)
	}
	return js, eventstore.New(js, "ITEMS"), env.Mongo(t).Database("projection_test")
}

func get(t *testing.T, coll *mongo.Collection, id string) storedItem {
	t.Helper()
	var s storedItem
	if err := coll.FindOne(context.Background(), bson.D{{Key: "_id", Value: id}}).Decode(&s); err != nil {
		t.Fatalf("find %s: %v", id, err)
	}
	return s
}

func TestUpsertKeepsNewestUnderReorderAndRedelivery(t *testing.T) {
	for _, single := range []bool{false, true} {
		t.Run(map[bool]string{false: "store guard", true: "single writer"}[single], func(t *testing.T) {
			singleWriter.Store(single)
			t.Cleanup(func() { singleWriter.Store(false) })
			testUpsertKeepsNewest(t)
		})
	}
}

func testUpsertKeepsNewest(t *testing.T) {
	_, _, db := setup(t)
	coll, ctx := db.Collection("items"), context.Background()
	mustApply := func(seq uint64, count int, want bool) {
		t.Helper()
		applied, err := Upsert(ctx, coll, "a", seq, item{Name: "a", Count: count})
		if err != nil || applied != want {
			t.Fatalf("seq %d: applied=%v err=%v, want applied=%v", seq, applied, err, want)
		}
	}
	mustApply(5, 5, true)
	mustApply(3, 3, false) // older arrives late
	mustApply(5, 5, false) // redelivered
	if got := get(t, coll, "a"); got.Count != 5 || got.LastSeq != 5 {
		t.Fatalf("after stale writes: %+v", got)
	}
	mustApply(9, 9, true)
	if got := get(t, coll, "a"); got.Count != 9 || got.LastSeq != 9 {
		t.Fatalf("after newer write: %+v", got)
	}
}

func appendItems(t *testing.T, st *eventstore.Store, n, versions int) {
	t.Helper()
	for v := 1; v <= versions; v++ {
		for i := range n {
			appendItem(t, st, fmt.Sprintf("item%02d", i), v)
		}
	}
}

func all(t *testing.T, coll *mongo.Collection) []storedItem {
	t.Helper()
	cur, err := coll.Find(context.Background(), bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var out []storedItem
	if err := cur.All(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRunProjectsResumesAndRebuildMatches(t *testing.T) {
	js, st, db := setup(t)
	appendItems(t, st, 10, 3)
	live := db.Collection("items_live")
	cfg := Config{Stream: "ITEMS", Durable: "items-live", FilterSubjects: []string{"items.>"}}

	runFor := func() {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- Run(ctx, js, live, cfg, handler) }()
		wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer wcancel()
		if err := WaitCaughtUp(wctx, js, "ITEMS", cfg.Durable); err != nil {
			t.Fatal(err)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	runFor()
	docs := all(t, live)
	if len(docs) != 10 || docs[0].Count != 3 {
		t.Fatalf("live projection: %d docs: %+v", len(docs), docs) // not docs[0]: an empty result must fail, not panic
	}

	// A restarted projector resumes from its durable position: only the
	// new events are delivered.
	appendItems(t, st, 12, 1) // item00..09 get version 1 again (newer seq), 10..11 are new
	runFor()
	cons, err := js.Consumer(context.Background(), "ITEMS", cfg.Durable)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := cons.Info(context.Background())
	if info.Delivered.Consumer != 42 {
		t.Fatalf("consumer delivered %d messages in total, want 42 (30 + 12, none twice)", info.Delivered.Consumer)
	}
	docs = all(t, live)
	if len(docs) != 12 || docs[0].Count != 1 {
		t.Fatalf("after resume: %d docs, first %+v", len(docs), docs[0])
	}

	// Rebuilding from the stream into a fresh collection gives the same
	// documents.
	rebuilt := db.Collection("items_rebuilt")
	n, err := Rebuild(context.Background(), js, "ITEMS", []string{"items.>"}, rebuilt, handler)
	if err != nil || n != 42 {
		t.Fatalf("rebuild applied %d, err %v", n, err)
	}
	if got, want := all(t, rebuilt), all(t, live); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("rebuild differs:\n got %v\nwant %v", got, want)
	}
}

// With one writer process, concurrent writes of one document still end at
// the newest sequence.
func TestSingleWriterConcurrentUpserts(t *testing.T) {
	singleWriter.Store(true)
	t.Cleanup(func() { singleWriter.Store(false) })
	_, _, db := setup(t)
	coll := db.Collection("items")
	var wg sync.WaitGroup
	for seq := 1; seq <= 30; seq++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := Upsert(context.Background(), coll, "a", uint64(seq), item{Name: "a", Count: seq}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got := get(t, coll, "a"); got.Count != 30 || got.LastSeq != 30 {
		t.Fatalf("after concurrent writes: %+v", got)
	}
}

// forEachWriter runs test on a fresh collection under each way of
// guarding writes: the store's guard, and a single writer's.
func forEachWriter(t *testing.T, test func(t *testing.T, coll *mongo.Collection)) {
	for _, single := range []bool{false, true} {
		t.Run(map[bool]string{false: "store guard", true: "single writer"}[single], func(t *testing.T) {
			singleWriter.Store(single)
			t.Cleanup(func() { singleWriter.Store(false) })
			_, _, db := setup(t)
			test(t, db.Collection("items"))
		})
	}
}

// A batch keeps the newest write of each document, inserts the new ones
// and replaces stored ones only with newer sequences.
func TestUpsertBatch(t *testing.T) {
	forEachWriter(t, func(t *testing.T, coll *mongo.Collection) {
		ctx := context.Background()
		if _, err := Upsert(ctx, coll, "old", 10, item{Name: "old", Count: 10}); err != nil {
			t.Fatal(err)
		}
		if _, err := Upsert(ctx, coll, "stale", 20, item{Name: "stale", Count: 20}); err != nil {
			t.Fatal(err)
		}
		err := UpsertBatch(ctx, coll, []Write{
			{ID: "new", Seq: 30, Doc: item{Name: "new", Count: 1}},
			{ID: "new", Seq: 32, Doc: item{Name: "new", Count: 3}}, // the newest of a batch wins
			{ID: "new", Seq: 31, Doc: item{Name: "new", Count: 2}},
			{ID: "old", Seq: 33, Doc: item{Name: "old", Count: 33}},     // stored older: replaced
			{ID: "stale", Seq: 15, Doc: item{Name: "stale", Count: 15}}, // stored newer: kept
		})
		if err != nil {
			t.Fatal(err)
		}
		got := all(t, coll)
		want := []storedItem{{ID: "new", LastSeq: 32, Name: "new", Count: 3}, {ID: "old", LastSeq: 33, Name: "old", Count: 33}, {ID: "stale", LastSeq: 20, Name: "stale", Count: 20}}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("got %+v\nwant %+v", got, want)
		}
	})
}

// The inline projection (Upsert) and the durable projector (UpsertBatch)
// write the same documents: when both store a document not stored yet,
// one insert loses to the other's with a duplicate key. That is a race to
// settle by comparing sequences, never an error: every write succeeds and
// the newest sequence wins, equal sequences included.
func TestConcurrentWritersOfOneDocumentConverge(t *testing.T) {
	forEachWriter(t, func(t *testing.T, coll *mongo.Collection) {
		ctx := context.Background()
		const docs, seqs = 30, 6
		for d := range docs {
			id := fmt.Sprintf("doc%02d", d)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for seq := uint64(1); seq <= seqs; seq++ {
				doc := item{Name: id, Count: int(seq)}
				// Each sequence is written by both writers, so equal
				// sequences race as well as different ones.
				wg.Go(func() {
					<-start
					if _, err := Upsert(ctx, coll, id, seq, doc); err != nil {
						t.Errorf("inline write %s@%d: %v", id, seq, err)
					}
				})
				wg.Go(func() {
					<-start
					if err := UpsertBatch(ctx, coll, []Write{{ID: id, Seq: seq, Doc: doc}}); err != nil {
						t.Errorf("batch write %s@%d: %v", id, seq, err)
					}
				})
			}
			close(start)
			wg.Wait()
			if got := get(t, coll, id); got.LastSeq != seqs || got.Count != seqs {
				t.Fatalf("%s after concurrent writes: %+v, want seq %d", id, got, seqs)
			}
		}
	})
}
