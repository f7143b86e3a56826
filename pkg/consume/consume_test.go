package consume_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/consume"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

// The two modes against a real JetStream server: what a handler does not
// finish is never acknowledged, what fails comes back, what is given up
// does not.

const stream = "JOBS"

func jobs(t *testing.T, n int) jetstream.JetStream {
	t.Helper()
	js := testenv.JetStreamAt(t, testenv.StartNATS(t))
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{"jobs.>"}}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := js.Publish(ctx, "jobs."+strconv.Itoa(i), []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	return js
}

// firstDeliveries is how many of batch come on their first delivery.
func firstDeliveries(batch []jetstream.Msg) (n int) {
	for _, m := range batch {
		if meta, err := m.Metadata(); err == nil && meta.NumDelivered == 1 {
			n++
		}
	}
	return n
}

// run runs a consumer until stop is called; stop waits for it to return.
func run(t *testing.T, f func(ctx context.Context) error) (stop func()) {
	t.Helper()
	return testkit.Background(t, f)
}

// settled is the durable's state (a zero one before it exists: every
// count 0, NumPending included, so callers also check what was handled).
func settled(t *testing.T, js jetstream.JetStream, durable string) *jetstream.ConsumerInfo {
	t.Helper()
	c, err := js.Consumer(context.Background(), stream, durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return &jetstream.ConsumerInfo{}
	}
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// log is what handlers saw: each message's data and delivery count.
type log struct {
	mu   sync.Mutex
	seen []string
}

func (l *log) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, s)
}

// addBatch logs each message's data of batch, in order.
func (l *log) addBatch(batch []jetstream.Msg) {
	for _, m := range batch {
		l.add(string(m.Data()))
	}
}

func (l *log) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, x := range l.seen {
		if x == s {
			n++
		}
	}
	return n
}

func (l *log) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.seen)
}

func TestMessagesRetriesAndGivesUpAsTheHandlerSays(t *testing.T) {
	js := jobs(t, 3)
	var seen log
	spec := consume.Spec{Stream: stream, Durable: "per-message", Workers: 2, AckWait: 5 * time.Second}
	run(t, func(ctx context.Context) error {
		return consume.Messages(ctx, js, spec, func(_ context.Context, m consume.Msg) consume.Outcome {
			seen.add(string(m.Data) + "#" + strconv.FormatUint(m.Delivered, 10))
			switch {
			case string(m.Data) == "0" && m.Delivered == 1:
				return consume.Retry(10 * time.Millisecond)
			case string(m.Data) == "1":
				return consume.GiveUp()
			}
			return consume.Done()
		})
	})
	testkit.Eventually(t, 10*time.Second, "every job settled", func() bool {
		info := settled(t, js, "per-message")
		return info.NumPending == 0 && info.NumAckPending == 0 && seen.count("0#2") == 1 && seen.count("1#1") == 1 && seen.count("2#1") == 1
	})
	// Redelivered once after its retry, given up once and never again,
	// done at once.
	if seen.count("0#1") != 1 || seen.count("0#2") != 1 || seen.count("1#1") != 1 || seen.count("1#2") != 0 || seen.count("2#1") != 1 {
		t.Fatalf("handled %v", seen.seen)
	}
}

func TestMessagesGivesBackWhatItDidNotHandleWhenStopped(t *testing.T) {
	js := jobs(t, 5)
	spec := consume.Spec{Stream: stream, Durable: "stopping", MaxBatch: 5, AckWait: time.Minute}
	var first log
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := consume.Messages(ctx, js, spec, func(hctx context.Context, m consume.Msg) consume.Outcome {
		first.add(string(m.Data))
		cancel() // the process stops while the first job is handled...
		if hctx.Err() == nil {
			t.Error("the handler's ctx did not end with the consumer's")
		}
		return consume.Done() // ...which finishes, and is acknowledged
	})
	if err != nil {
		t.Fatal(err)
	}
	if first.len() != 1 || first.count("0") != 1 {
		t.Fatalf("handled before stopping: %v; want the first job alone", first.seen)
	}
	// The four jobs pulled but not handled were given back at once (an
	// AckWait of a minute would hold them otherwise), the first never
	// comes again.
	var second log
	stop := run(t, func(ctx context.Context) error {
		return consume.Messages(ctx, js, spec, func(_ context.Context, m consume.Msg) consume.Outcome {
			second.add(string(m.Data))
			return consume.Done()
		})
	})
	testkit.Eventually(t, 10*time.Second, "the other jobs handled", func() bool { return second.len() >= 4 })
	stop()
	if second.count("0") != 0 || second.len() != 4 {
		t.Fatalf("handled after the restart: %v; want jobs 1..4 once each", second.seen)
	}
}

// lingering runs a batch consumer on durable whose batches linger 50 ms,
// so that the jobs published before it starts come as one batch.
func lingering(t *testing.T, js jetstream.JetStream, durable string, h func(batch []jetstream.Msg) error) {
	t.Helper()
	run(t, func(ctx context.Context) error {
		return consume.Batches(ctx, js, consume.Spec{Stream: stream, Durable: durable, Linger: 50 * time.Millisecond},
			func(_ context.Context, batch []jetstream.Msg) error { return h(batch) })
	})
}

func TestBatchesRedeliversAFailedBatch(t *testing.T) {
	js := jobs(t, 3)
	var seen log
	lingering(t, js, "batches", func(batch []jetstream.Msg) error {
		// A batch fails while it holds a first delivery.
		fail := false
		for _, m := range batch {
			seen.add(string(m.Data()))
			if meta, _ := m.Metadata(); meta.NumDelivered == 1 {
				fail = true
			}
		}
		if fail {
			return errors.New("store unavailable")
		}
		return nil
	})
	testkit.Eventually(t, 10*time.Second, "the batch handled again and acknowledged", func() bool {
		info := settled(t, js, "batches")
		return info.NumPending == 0 && info.NumAckPending == 0 && seen.count("0") >= 2 && seen.count("1") >= 2 && seen.count("2") >= 2
	})
}

// A handler that fails one message of its batch has that one
// redelivered alone; the others are acknowledged and never seen again.
func TestBatchesRedeliversOnlyWhatFailedSays(t *testing.T) {
	js := jobs(t, 4)
	var seen log
	lingering(t, js, "partial", func(batch []jetstream.Msg) error {
		var failed []int
		for i, m := range batch {
			seen.add(string(m.Data()))
			if meta, _ := m.Metadata(); string(m.Data()) == "2" && meta.NumDelivered < 3 {
				failed = append(failed, i) // job 2 fails twice
			}
		}
		if len(failed) > 0 {
			return consume.Failed(errors.New("job 2 cannot be stored yet"), failed...)
		}
		return nil
	})
	testkit.Eventually(t, 20*time.Second, "job 2 handled on its third delivery, the rest once", func() bool {
		info := settled(t, js, "partial")
		return info.NumPending == 0 && info.NumAckPending == 0 && seen.count("2") == 3
	})
	for _, job := range []string{"0", "1", "3"} {
		if n := seen.count(job); n != 1 {
			t.Errorf("job %s handled %d times; want once", job, n)
		}
	}
}

func TestBatchesAcknowledgesNothingWhenStoppedMidBatch(t *testing.T) {
	js := jobs(t, 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := consume.Batches(ctx, js, consume.Spec{Stream: stream, Durable: "batches-stop", AckWait: time.Minute},
		func(ctx context.Context, _ []jetstream.Msg) error {
			cancel()
			return ctx.Err() // the handler gives up half-way
		})
	if err != nil {
		t.Fatal(err)
	}
	if info := settled(t, js, "batches-stop"); info.AckFloor.Stream != 0 {
		t.Fatalf("acknowledged up to %d after a batch that was not handled", info.AckFloor.Stream)
	}
	// The batch was given back at once: the next consumer has it long
	// before an AckWait of a minute would let it go.
	var next log
	run(t, func(ctx context.Context) error {
		return consume.Batches(ctx, js, consume.Spec{Stream: stream, Durable: "batches-stop", AckWait: time.Minute},
			func(_ context.Context, batch []jetstream.Msg) error {
				for _, m := range batch {
					next.add(string(m.Data()))
				}
				return nil
			})
	})
	testkit.Eventually(t, 10*time.Second, "the next consumer handles every job", func() bool {
		return next.count("0") == 1 && next.count("1") == 1 && next.count("2") == 1
	})
}

// A durable being retired is worked through as it stands and never made
// anew: once one replica deleted it, another's Existing spec finds it
// gone instead of creating it again from the stream's first message.
func TestExistingNeverCreatesTheDurable(t *testing.T) {
	js := jobs(t, 3)
	ctx := context.Background()
	spec := consume.Spec{Stream: stream, Durable: "retired", Existing: true}
	h := func(context.Context, []jetstream.Msg) error { return nil }
	if err := consume.Batches(ctx, js, spec, h); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Fatalf("Batches on a missing durable: %v; want ErrConsumerNotFound", err)
	}
	if err := consume.Messages(ctx, js, spec, func(context.Context, consume.Msg) consume.Outcome { return consume.Done() }); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Fatalf("Messages on a missing durable: %v; want ErrConsumerNotFound", err)
	}
	if _, err := js.Consumer(ctx, stream, "retired"); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Fatalf("the durable was made: %v", err)
	}
	// One that stands is worked through.
	if _, err := js.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{Durable: "retired", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	var got log
	stop := run(t, func(ctx context.Context) error {
		return consume.Batches(ctx, js, spec, collect(&got))
	})
	testkit.Eventually(t, 10*time.Second, "the standing durable worked through", func() bool { return got.len() == 3 })
	stop()
}

// What a replica holds is not delivered again while it holds it, however
// short AckWait is: a slow batch, and the messages waiting behind it, are
// said to be in hand. So AckWait can be short, and what nobody holds (a
// killed replica's, or what a lost node delivered to no one) comes back
// soon.
func TestBatchesKeepsWhatItHoldsPastAckWait(t *testing.T) {
	const ackWait = time.Second
	js := jobs(t, 12)
	var got log
	slow, first := true, 0
	stop := run(t, func(ctx context.Context) error {
		return consume.Batches(ctx, js, consume.Spec{Stream: stream, Durable: "slow", AckWait: ackWait, MaxBatch: 4},
			func(ctx context.Context, batch []jetstream.Msg) error {
				if slow { // slow work, three times AckWait, with the rest waiting behind it
					slow = false
					select {
					case <-time.After(3 * ackWait):
					case <-ctx.Done():
					}
				}
				first += firstDeliveries(batch)
				got.addBatch(batch)
				return nil
			})
	})
	testkit.Eventually(t, 30*time.Second, "every job handled", func() bool { return got.len() >= 12 })
	stop()
	checkHeldJobs(t, &got, 0, first) // (in hand behind slow work, not held back: none early)
}

// While Hold says no (the disk is nearly full), nothing is handled; what
// is in hand meanwhile, held three times AckWait and past a pull
// request's expiry, is not delivered again, and once Hold says yes every
// job is handled once.
func TestBatchesHoldHandlesNothingUntilItLetsGo(t *testing.T) {
	defer consume.HoldEvery(100 * time.Millisecond)()
	const ackWait = time.Second
	js := jobs(t, 12)
	var got log
	var mu sync.Mutex
	asked, early, first := 0, 0, 0
	hold := func() error {
		mu.Lock()
		defer mu.Unlock()
		if asked++; asked <= 70 { // 7 s: seven times AckWait, past the 5 s pull expiry
			return errors.New("disk nearly full")
		}
		return nil
	}
	stop := run(t, func(ctx context.Context) error {
		return consume.Batches(ctx, js, consume.Spec{Stream: stream, Durable: "held", AckWait: ackWait, MaxBatch: 4, Hold: hold},
			func(_ context.Context, batch []jetstream.Msg) error {
				mu.Lock()
				if asked <= 70 {
					early += len(batch)
				}
				first += firstDeliveries(batch)
				mu.Unlock()
				got.addBatch(batch)
				return nil
			})
	})
	testkit.Eventually(t, 30*time.Second, "every job handled", func() bool { return got.len() >= 12 })
	stop()
	checkHeldJobs(t, &got, early, first)
}

// checkHeldJobs checks what a consumer held for a while handled of the 12
// jobs: none while held (early), each once, and all on their first
// delivery (first of them): nothing was delivered again across the hold.
func checkHeldJobs(t *testing.T, got *log, early, first int) {
	t.Helper()
	if early != 0 {
		t.Errorf("%d jobs handled while held", early)
	}
	for i := range 12 {
		if n := got.count(strconv.Itoa(i)); n != 1 {
			t.Errorf("job %d handled %d times; want once", i, n)
		}
	}
	if first != 12 {
		t.Errorf("%d of 12 jobs handled on their first delivery; want all (none delivered again across the hold)", first)
	}
}

// Messages' hold: once Hold says no, nothing more is handled, and what
// the client library had pulled is kept in hand, past AckWait and the
// pull request's expiry, neither handled nor given back (a webhook
// delivery's attempt number is its delivery count); once Hold says yes
// every job is handled once, on its first delivery.
func TestMessagesHoldHandlesNothingUntilItLetsGo(t *testing.T) {
	defer consume.HoldEvery(100 * time.Millisecond)()
	js := jobs(t, 12)
	var got log
	var mu sync.Mutex
	holding, asked, early, first, leftWhenHeld := false, 0, 0, 0, -1
	hold := func() error {
		mu.Lock()
		defer mu.Unlock()
		if !holding {
			return nil
		}
		if asked++; asked == 2 { // the first said no: the consumer holds from here
			leftWhenHeld = 12 - got.len()
		}
		if asked <= 70 { // 7 s: seven times AckWait, past the 5 s pull expiry
			return errors.New("disk nearly full")
		}
		holding = false
		return nil
	}
	stop := run(t, func(ctx context.Context) error {
		spec := consume.Spec{Stream: stream, Durable: "held-messages", AckWait: time.Second, Workers: 2, MaxBatch: 4, Hold: hold}
		return consume.Messages(ctx, js, spec, func(ctx context.Context, m consume.Msg) consume.Outcome {
			mu.Lock()
			if string(m.Data) == "0" {
				holding = true // the disk fills as the first job is handled
			}
			if asked >= 2 && holding {
				early++
			}
			mu.Unlock()
			got.add(string(m.Data))
			if m.Delivered == 1 {
				mu.Lock()
				first++
				mu.Unlock()
			}
			select { // each job takes a while, so some are still to do when the hold comes
			case <-time.After(50 * time.Millisecond):
			case <-ctx.Done():
			}
			return consume.Done()
		})
	})
	testkit.Eventually(t, 30*time.Second, "every job handled", func() bool { return got.len() >= 12 })
	stop()
	if leftWhenHeld <= 0 {
		t.Fatalf("%d jobs left when the hold began; the test wants some", leftWhenHeld)
	}
	checkHeldJobs(t, &got, early, first)
}

// A handler that takes longer than AckWait (a webhook attempt's catch-up,
// send and disable write together) keeps its message: it is said to be
// in progress meanwhile, not delivered to another worker mid-attempt.
func TestMessagesKeepsAMessageWhoseHandlerOutlastsAckWait(t *testing.T) {
	const ackWait = time.Second
	js := jobs(t, 1)
	var seen log
	spec := consume.Spec{Stream: stream, Durable: "slow", Workers: 2, AckWait: ackWait}
	run(t, func(ctx context.Context) error {
		return consume.Messages(ctx, js, spec, func(ctx context.Context, m consume.Msg) consume.Outcome {
			seen.add(string(m.Data) + "#" + strconv.FormatUint(m.Delivered, 10))
			select { // the slow attempt: three times AckWait
			case <-time.After(3 * ackWait):
			case <-ctx.Done():
			}
			return consume.Done()
		})
	})
	testkit.Eventually(t, 10*time.Second, "the job settled", func() bool {
		info := settled(t, js, "slow")
		return info.NumPending == 0 && info.NumAckPending == 0 && seen.len() >= 1
	})
	if seen.count("0#1") != 1 || seen.len() != 1 {
		t.Fatalf("handled %v; want once, on its first delivery", seen.seen)
	}
}
