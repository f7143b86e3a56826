package runtime

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/projection"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

// A projection started through Deps waits for a stream another service
// has yet to make, and writes nothing while the process's writes are
// held, whatever its own configuration says: the hold is the process's.
func TestAProjectionStartedThroughDepsWaitsForItsStreamAndHoldsWithTheProcess(t *testing.T) {
	env := testenv.New(t)
	nc := env.Conn(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// What the projection asks of JetStream, seen.
	asked, err := nc.SubscribeSync("$JS.API.>")
	if err != nil {
		t.Fatal(err)
	}
	log := &testkit.LogBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the projection's log:\n%s", log)
		}
	})
	var held atomic.Bool
	held.Store(true)
	d := Deps{JS: js, Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		WritesHeld: func() error {
			if held.Load() {
				return errors.New("disk nearly full")
			}
			return nil
		}}
	coll := env.Mongo(t).Database("runtime_test").Collection("items")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	copyItem := func(_ context.Context, rec eventstore.Record) (string, any, error) {
		return strings.TrimPrefix(rec.Subject, "items."), bson.D{{Key: "data", Value: string(rec.Data)}}, nil
	}
	never := func() error { return nil } // overridden: the process holds
	d.StartProjection(ctx, coll, projection.Config{Stream: "ITEMS", Durable: "items-copy", FilterSubjects: []string{"items.>"}, Hold: never}, copyItem)

	// The stream is made only once the projection has asked for it.
	testkit.Eventually(t, 10*time.Second, "the projection asking for its stream", func() bool {
		m, err := asked.NextMsg(10 * time.Millisecond)
		return err == nil && strings.Contains(m.Subject, ".ITEMS")
	})
	if _, err := eventstore.EnsureStream(ctx, js, eventstore.StreamConfig{Name: "ITEMS", Subjects: []string{"items.>"}}); err != nil {
		t.Fatal(err)
	}
	st := eventstore.New(js, "ITEMS")
	for _, id := range []string{"a", "b", "c"} {
		if _, err := st.Append(ctx, "items."+id, 0, "", eventstore.Event{Type: "item", Data: []byte(id)}); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, 10*time.Second, "the projection holding", func() bool {
		return strings.Contains(log.String(), `msg="consumer holding its work" durable=items-copy`)
	})
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 0 {
		t.Fatalf("%d documents written while held (%v); want none", n, err)
	}
	held.Store(false)
	testkit.Eventually(t, 10*time.Second, "every item copied once writes are not held", func() bool {
		n, err := coll.CountDocuments(ctx, bson.D{})
		return err == nil && n == 3
	})
}
