package consume_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/consume"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

// A durable deleted under its consumers (an operator's mistake, a
// restore) is made again by them: the messages stored after it are
// handled, those before its acknowledgement floor are not handled again,
// and the durable starts there from then on, a restart included.

func publish(t *testing.T, js jetstream.JetStream, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if _, err := js.Publish(context.Background(), "jobs."+strconv.Itoa(i), []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
}

// floorRead waits until every replica's consumer has read the durable's
// floor since the server's floor reached seq.
func floorRead(t *testing.T, js jetstream.JetStream, durable string, seq uint64, replicas int) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, "the durable's floor reaches "+strconv.FormatUint(seq, 10), func() bool {
		return settled(t, js, durable).AckFloor.Stream >= seq
	})
	from := consume.FloorsRead()
	testkit.Eventually(t, 10*time.Second, "the floor read since", func() bool { return consume.FloorsRead() >= from+uint64(2*replicas) })
}

// collect is a handler that logs each message's data in got.
func collect(got *log) consume.Handler {
	return func(_ context.Context, batch []jetstream.Msg) error {
		got.addBatch(batch)
		return nil
	}
}

// handledAfter waits until messages from to to-1, published after the
// durable was deleted, are handled, and checks that none before from was
// handled twice and that the durable now starts after from.
func handledAfter(t *testing.T, js jetstream.JetStream, got *log, durable string, from, to int) {
	t.Helper()
	testkit.Eventually(t, 20*time.Second, "what came after the deletion handled", func() bool {
		for i := from; i < to; i++ {
			if got.count(strconv.Itoa(i)) == 0 {
				return false
			}
		}
		return true
	})
	for i := range from {
		if n := got.count(strconv.Itoa(i)); n != 1 {
			t.Fatalf("message %d, handled before the deletion, handled %d times: the history was handled again", i, n)
		}
	}
	info := settled(t, js, durable)
	if want := uint64(from + 1); info.Config.DeliverPolicy != jetstream.DeliverByStartSequencePolicy || info.Config.OptStartSeq != want {
		t.Fatalf("made again as %v from %d; want from sequence %d", info.Config.DeliverPolicy, info.Config.OptStartSeq, want)
	}
}

func TestBatchesMakeADeletedDurableAgainAfterItsFloor(t *testing.T) {
	defer consume.ReadFloorsEvery(50 * time.Millisecond)()
	js := jobs(t, 100)
	var got log
	spec := consume.Spec{Stream: stream, Durable: "projector", MaxBatch: 16}
	handle := collect(&got)
	// Two replicas share the durable: both see it go, one makes it again
	// and the other takes it as it is.
	stopA := run(t, func(ctx context.Context) error { return consume.Batches(ctx, js, spec, handle) })
	stopB := run(t, func(ctx context.Context) error { return consume.Batches(ctx, js, spec, handle) })
	testkit.Eventually(t, 10*time.Second, "the history handled", func() bool { return got.len() == 100 })
	floorRead(t, js, "projector", 100, 2)

	if err := js.DeleteConsumer(context.Background(), stream, "projector"); err != nil {
		t.Fatal(err)
	}
	publish(t, js, 100, 150)
	handledAfter(t, js, &got, "projector", 100, 150)

	// A restart takes the durable as it was made again.
	stopA()
	stopB()
	run(t, func(ctx context.Context) error { return consume.Batches(ctx, js, spec, handle) })
	publish(t, js, 150, 160)
	testkit.Eventually(t, 10*time.Second, "handled after a restart", func() bool { return got.count("159") >= 1 })
}

// A work queue's durable is made again to deliver what the queue holds.
func TestMessagesMakeADeletedWorkQueueDurableAgain(t *testing.T) {
	defer consume.ReadFloorsEvery(50 * time.Millisecond)()
	js := testenv.JetStreamAt(t, testenv.StartNATS(t))
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: stream, Subjects: []string{"jobs.>"}, Retention: jetstream.WorkQueuePolicy}); err != nil {
		t.Fatal(err)
	}
	publish(t, js, 0, 20)
	var got log
	spec := consume.Spec{Stream: stream, Durable: "deliveries", Workers: 4}
	run(t, func(ctx context.Context) error {
		return consume.Messages(ctx, js, spec, func(_ context.Context, m consume.Msg) consume.Outcome {
			got.add(string(m.Data))
			return consume.Done()
		})
	})
	testkit.Eventually(t, 10*time.Second, "the first jobs handled", func() bool { return got.len() == 20 })
	floorRead(t, js, "deliveries", 20, 1)
	if err := js.DeleteConsumer(context.Background(), stream, "deliveries"); err != nil {
		t.Fatal(err)
	}
	publish(t, js, 20, 40)
	testkit.Eventually(t, 20*time.Second, "the jobs after the deletion handled", func() bool { return got.count("39") >= 1 && got.count("20") >= 1 })
	for i := range 20 {
		if n := got.count(strconv.Itoa(i)); n != 1 {
			t.Fatalf("job %d handled %d times", i, n)
		}
	}
}

// A durable being retired (Existing) is not made again: its deletion is
// the end of the work through it.
func TestARetiredDurableDeletedIsNotMadeAgain(t *testing.T) {
	js := jobs(t, 3)
	ctx := context.Background()
	for _, mode := range []string{"batches", "messages"} {
		if _, err := js.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{Durable: "retired", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			t.Fatal(err)
		}
		spec := consume.Spec{Stream: stream, Durable: "retired", Existing: true}
		var got log
		done := make(chan error, 1)
		go func() {
			if mode == "batches" {
				done <- consume.Batches(ctx, js, spec, collect(&got))
				return
			}
			done <- consume.Messages(ctx, js, spec, func(_ context.Context, m consume.Msg) consume.Outcome {
				got.add(string(m.Data))
				return consume.Done()
			})
		}()
		testkit.Eventually(t, 10*time.Second, mode+": the durable worked through", func() bool { return got.len() == 3 })
		if err := js.DeleteConsumer(ctx, stream, "retired"); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%s ended with %v", mode, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: still consuming 20 s after its retired durable was deleted", mode)
		}
		if _, err := js.Consumer(ctx, stream, "retired"); !errors.Is(err, jetstream.ErrConsumerNotFound) {
			t.Fatalf("%s: the retired durable was made again: %v", mode, err)
		}
	}
}

// A stream deleted with its durables and made anew (a service's start
// makes its streams) numbers its messages from 1 again: the durable made
// again reads it from its first message, not after the old floor.
func TestADurableOfAStreamMadeAnewStartsAtItsFirstMessage(t *testing.T) {
	defer consume.ReadFloorsEvery(50 * time.Millisecond)()
	js := jobs(t, 30)
	var got log
	run(t, func(ctx context.Context) error {
		return consume.Batches(ctx, js, consume.Spec{Stream: stream, Durable: "projector"}, collect(&got))
	})
	testkit.Eventually(t, 10*time.Second, "the old stream handled", func() bool { return got.len() == 30 })
	floorRead(t, js, "projector", 30, 1)
	testenv.RemakeStream(t, js, stream, func(ctx context.Context) error {
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{"jobs.>"}})
		return err
	})
	publish(t, js, 100, 110)
	testkit.Eventually(t, 20*time.Second, "the new stream's messages handled", func() bool {
		for i := 100; i < 110; i++ {
			if got.count(strconv.Itoa(i)) != 1 {
				return false
			}
		}
		return true
	})
}
