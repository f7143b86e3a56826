package consume_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/consume"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

// A durable deleted while none of its consumers ran is made at their
// start after the floor they last kept: what they had handled is not
// handled again, what came since is. Deleting its kept floor too starts
// it from the stream's first message, as a first deployment.

// floorKept waits until the durable's floor kept in the bucket reaches seq.
func floorKept(t *testing.T, js jetstream.JetStream, durable string, seq uint64) {
	t.Helper()
	ctx := context.Background()
	testkit.Eventually(t, 10*time.Second, "the floor kept reaches "+strconv.FormatUint(seq, 10), func() bool {
		kv, err := js.KeyValue(ctx, consume.FloorsBucket)
		if err != nil {
			return false
		}
		e, err := kv.Get(ctx, consume.FloorKey(stream, durable))
		if err != nil {
			return false
		}
		var kept struct {
			Floor uint64 `json:"floor"`
		}
		return json.Unmarshal(e.Value(), &kept) == nil && kept.Floor >= seq
	})
}

func TestADurableDeletedWhileNoneRanStartsAfterItsKeptFloor(t *testing.T) {
	defer consume.ReadFloorsEvery(50 * time.Millisecond)()
	js := jobs(t, 100)
	var got log
	spec := consume.Spec{Stream: stream, Durable: "fanout", MaxBatch: 16}
	handle := collect(&got)
	stop := run(t, func(ctx context.Context) error { return consume.Batches(ctx, js, spec, handle) })
	testkit.Eventually(t, 10*time.Second, "the history handled", func() bool { return got.len() == 100 })
	floorKept(t, js, "fanout", 100)
	stop()

	if err := js.DeleteConsumer(context.Background(), stream, "fanout"); err != nil {
		t.Fatal(err)
	}
	publish(t, js, 100, 150)
	run(t, func(ctx context.Context) error { return consume.Batches(ctx, js, spec, handle) })
	handledAfter(t, js, &got, "fanout", 100, 150)
}

func TestADurableDeletedWithItsKeptFloorStartsAtTheFirstMessage(t *testing.T) {
	defer consume.ReadFloorsEvery(50 * time.Millisecond)()
	js := jobs(t, 20)
	var got log
	spec := consume.Spec{Stream: stream, Durable: "projector", Workers: 2}
	handle := func(_ context.Context, m consume.Msg) consume.Outcome {
		got.add(string(m.Data))
		return consume.Done()
	}
	stop := run(t, func(ctx context.Context) error { return consume.Messages(ctx, js, spec, handle) })
	testkit.Eventually(t, 10*time.Second, "the history handled", func() bool { return got.len() == 20 })
	floorKept(t, js, "projector", 20)
	stop()

	ctx := context.Background()
	if err := js.DeleteConsumer(ctx, stream, "projector"); err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, consume.FloorsBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, consume.FloorKey(stream, "projector")); err != nil {
		t.Fatal(err)
	}
	run(t, func(ctx context.Context) error { return consume.Messages(ctx, js, spec, handle) })
	testkit.Eventually(t, 10*time.Second, "the history handled again", func() bool {
		for i := range 20 {
			if got.count(strconv.Itoa(i)) != 2 {
				return false
			}
		}
		return true
	})
	if info := settled(t, js, "projector"); info.Config.DeliverPolicy != jetstream.DeliverAllPolicy {
		t.Fatalf("made at start as %v; want from the first message", info.Config.DeliverPolicy)
	}
}

// While the consumer is held (the disk nearly full), a floor that has not
// moved is not kept again: each keeping is a write to the disk being
// saved. Once the hold ends it is kept again as before.
func TestAFloorThatDidNotMoveIsNotKeptAgainWhileHeld(t *testing.T) {
	defer consume.ReadFloorsEvery(20 * time.Millisecond)()
	defer consume.KeepFloorsAgainEvery(time.Nanosecond)()
	js := jobs(t, 10)
	var held atomic.Bool
	hold := func() error {
		if held.Load() {
			return errors.New("disk nearly full")
		}
		return nil
	}
	var got log
	run(t, func(ctx context.Context) error {
		return consume.Batches(ctx, js, consume.Spec{Stream: stream, Durable: "keeper", MaxBatch: 16, Hold: hold}, collect(&got))
	})
	testkit.Eventually(t, 10*time.Second, "the jobs handled", func() bool { return got.len() == 10 })
	floorKept(t, js, "keeper", 10)

	held.Store(true)
	saved, read := consume.FloorsSaved(), consume.FloorsRead()
	testkit.Eventually(t, 10*time.Second, "ten floors read while held", func() bool { return consume.FloorsRead() >= read+10 })
	// A keeping begun before the hold was seen may end meanwhile.
	if n := consume.FloorsSaved() - saved; n > 1 {
		t.Fatalf("a floor that did not move was kept %d times in ten reads while held", n)
	}
	held.Store(false)
	saved = consume.FloorsSaved()
	testkit.Eventually(t, 10*time.Second, "the floor kept again once the hold ended", func() bool { return consume.FloorsSaved() > saved+1 })
}
