package adapters

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	events "github.com/voiceai-platform/voiceai/proto-events"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"
	"github.com/voiceai-platform/voiceai/services/webhooks/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/app/attemptlogtest"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

func TestStreamAttemptLog(t *testing.T) {
	attemptlogtest.Run(t, func(t *testing.T) (app.AttemptLog, func() app.AttemptLog) {
		js := testenv.StreamsAt(t, EnsureStreams)
		ctx := context.Background()
		log := slog.New(slog.DiscardHandler)
		publisher := newPublisher(t, js)
		// A restart: a new log replaying the stream.
		reopen := func() app.AttemptLog {
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			l := memory.NewAttemptLog()
			if err := FollowAttemptLog(ctx, js, l, log); err != nil {
				t.Fatal(err)
			}
			return StreamAttemptLog{AttemptLog: l, Publisher: publisher}
		}
		return reopen(), reopen
	})
}

// newPublisher is an AttemptPublisher on js, retrying until t ends.
func newPublisher(t *testing.T, js jetstream.JetStream) *AttemptPublisher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	p, err := NewAttemptPublisher(ctx, js, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// queueAway is the streams without the durable log's queue, and a
// publisher on them that does not make the queue again (as it does one
// it finds deleted): the queue stays away until the test brings it back
// (an election, or a partition, which making it again cannot mend). A
// publisher that made it again raced the tests' looks at what waits.
func queueAway(t *testing.T) (jetstream.JetStream, *AttemptPublisher) {
	t.Helper()
	js := testenv.StreamsAt(t, EnsureStreams)
	if err := js.DeleteStream(context.Background(), events.WebhookAttemptsLogStream); err != nil {
		t.Fatal(err)
	}
	p := newPublisher(t, js)
	p.kept[1] = nil
	return js, p
}

// RecordDurable waits for the streams' answers: with no stream to store
// the attempt it fails, where Record (which does not wait) succeeds.
func TestRecordDurableWaitsForTheStream(t *testing.T) {
	_, p := queueAway(t)
	ctx := context.Background()
	a := attemptAt(1)
	if err := p.Record(ctx, a); err != nil {
		t.Fatalf("record: %v", err)
	}
	if err := p.RecordDurable(ctx, a); err == nil {
		t.Fatal("recorded durably with no stream to store it")
	}
}

// A record a stream did not take is published again until it does: the
// durable log's queue, away while more attempts of a webhook were made
// than WEBHOOK_ATTEMPTS keeps (as while its leader is elected), gets
// every one of them once it is back, and WEBHOOK_ATTEMPTS the newest
// it keeps. (When the queue sourced WEBHOOK_ATTEMPTS, it got the newest
// 1,000 only.)
func TestRecordsNotTakenArePublishedAgain(t *testing.T) {
	js, p := queueAway(t)
	ctx := context.Background()
	const n = AttemptsPerWebhook + 500
	recordAll(t, p, n, nil)
	held := func(stream string) uint64 { return streamMsgs(js, stream) }
	testkit.Eventually(t, 10*time.Second, "WEBHOOK_ATTEMPTS holding the newest attempts", func() bool {
		return held(events.WebhookAttemptsStream) == AttemptsPerWebhook
	})
	// The client's own retries (two, 250 ms apart) are over: every record
	// the queue did not take waits here (one of them in the retry loop).
	testkit.Eventually(t, 10*time.Second, "the records the queue did not take held", func() bool { return p.retries.Len() >= n-1 })
	if err := EnsureStreams(ctx, js, 1); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "every attempt on the durable log's queue", func() bool {
		return held(events.WebhookAttemptsLogStream) == n
	})
	// Published again, a record the stream already took is kept once.
	if err := p.RecordDurable(ctx, attemptAt(0)); err != nil {
		t.Fatal(err)
	}
	if got := held(events.WebhookAttemptsLogStream); got != n {
		t.Errorf("the queue holds %d records after one was published twice; want %d", got, n)
	}
}

// Flush waits for the records a stream has not taken: while the durable
// log's queue is away it does not return, and once the queue is back it
// returns with every record there.
func TestFlushWaitsForTheRecordsHeld(t *testing.T) {
	js, p := queueAway(t)
	ctx := context.Background()
	const n = 50
	recordAll(t, p, n, nil)
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := p.Flush(short); err == nil {
		t.Fatal("flushed with the queue away")
	}
	if err := EnsureStreams(ctx, js, 1); err != nil {
		t.Fatal(err)
	}
	long, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := p.Flush(long); err != nil {
		t.Fatal(err)
	}
	if got := streamMsgs(js, events.WebhookAttemptsLogStream); got != n {
		t.Errorf("flushed with %d records on the queue; want %d", got, n)
	}
}

// A deployment whose durable log's queue sourced WEBHOOK_ATTEMPTS is
// updated in place: the queue keeps what it had sourced and takes the
// records published to it from then on, and the copy stores both.
func TestTheSourcedQueueIsUpdatedInPlace(t *testing.T) {
	js := testenv.StreamsAt(t, EnsureStreams)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := js.DeleteStream(ctx, events.WebhookAttemptsLogStream); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: events.WebhookAttemptsLogStream, Retention: jetstream.WorkQueuePolicy,
		Sources: []*jetstream.StreamSource{{Name: events.WebhookAttemptsStream}}}); err != nil {
		t.Fatal(err)
	}
	// Before: records published to WEBHOOK_ATTEMPTS alone, and sourced.
	for i := range 20 {
		msgs, err := attemptMsgs(attemptAt(i))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.PublishMsg(ctx, msgs[0]); err != nil {
			t.Fatal(err)
		}
	}
	queued := func() uint64 { return streamMsgs(js, events.WebhookAttemptsLogStream) }
	testkit.Eventually(t, 10*time.Second, "the sourced records on the queue", func() bool { return queued() == 20 })

	if err := EnsureStreams(ctx, js, 1); err != nil {
		t.Fatal(err)
	}
	str, err := js.Stream(ctx, events.WebhookAttemptsLogStream)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := str.CachedInfo().Config; len(cfg.Sources) != 0 {
		t.Errorf("the queue still sources %v", cfg.Sources)
	}
	p := newPublisher(t, js)
	for i := 20; i < 30; i++ {
		if err := p.RecordDurable(ctx, attemptAt(i)); err != nil {
			t.Fatal(err)
		}
	}
	if got := queued(); got != 30 {
		t.Fatalf("the queue holds %d records; want 30 (no record sourced twice)", got)
	}
	pages, err := OpenAttemptPages(ctx, testenv.New(t).Mongo(t).Database("attempt_pages_upgrade"))
	if err != nil {
		t.Fatal(err)
	}
	StoreAttempts(ctx, js, pages, slog.New(slog.DiscardHandler), nil)
	testkit.Eventually(t, 15*time.Second, "all 30 attempts in the pages", func() bool {
		page, err := pages.Older(ctx, "whk_1", domain.LogFilter{}, nil, 100)
		return err == nil && len(page) == 30
	})
}

// In a three-node cluster, the attempt streams changing leaders while a
// webhook's attempts are recorded (as when a node restarts) lose none of
// them: the durable log's queue gets every one, WEBHOOK_ATTEMPTS the
// newest it keeps.
func TestAttemptsOutliveLeaderChanges(t *testing.T) {
	nodes := testenv.StartCluster(t, "attempts", 3)
	var urls []string
	for _, n := range nodes {
		urls = append(urls, n.ClientURL())
	}
	js := testenv.JetStreamAt(t, strings.Join(urls, ","))
	ctx := context.Background()
	if err := EnsureStreams(ctx, js, 3); err != nil {
		t.Fatal(err)
	}
	p := newPublisher(t, js)
	stepDown := func(stream string) {
		t.Helper()
		if _, err := js.Conn().Request("$JS.API.STREAM.LEADER.STEPDOWN."+stream, nil, 10*time.Second); err != nil {
			t.Fatalf("step down %s: %v", stream, err)
		}
	}
	const n = 3 * AttemptsPerWebhook
	recordAll(t, p, n, func(i int) {
		switch i {
		case n / 6:
			stepDown(events.WebhookAttemptsLogStream)
		case n / 2:
			stepDown(events.WebhookAttemptsStream)
		}
	})
	held := func(stream string) uint64 { return streamMsgs(js, stream) }
	testkit.Eventually(t, 60*time.Second, "every attempt on the durable log's queue, the newest on WEBHOOK_ATTEMPTS", func() bool {
		return held(events.WebhookAttemptsLogStream) == n && held(events.WebhookAttemptsStream) == AttemptsPerWebhook
	})
}

// attemptAt is the i-th attempt of the tests' webhook.
func attemptAt(i int) *webhooksv1.DeliveryAttempt {
	return &webhooksv1.DeliveryAttempt{AttemptId: fmt.Sprintf("evt_%04d:whk_1:1", i), EventId: fmt.Sprintf("evt_%04d", i),
		WorkspaceId: "ws_a", WebhookId: "whk_1", Event: "call_started", AtUnixMs: int64(1000 + i), Success: true, Final: true}
}

// recordAll records attempts 0 to n-1 with p, calling before (if set)
// ahead of each.
func recordAll(t *testing.T, p *AttemptPublisher, n int, before func(i int)) {
	t.Helper()
	for i := range n {
		if before != nil {
			before(i)
		}
		if err := p.Record(context.Background(), attemptAt(i)); err != nil {
			t.Fatal(err)
		}
	}
}

// streamMsgs is how many messages stream holds (0 when it is not there).
func streamMsgs(js jetstream.JetStream, stream string) uint64 {
	str, err := js.Stream(context.Background(), stream)
	if err != nil {
		return 0
	}
	return str.CachedInfo().State.Msgs
}

// A record larger than a message may be is kept without the bodies it
// carries: the line stays in the log.
func TestARecordTooLargeIsKeptWithoutItsBodies(t *testing.T) {
	js := testenv.StreamsAt(t, EnsureStreams)
	p := newPublisher(t, js)
	a := attemptAt(1)
	a.RequestBody = []byte(strings.Repeat("x", int(js.Conn().MaxPayload())))
	if err := p.Record(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	msg, err := js.Conn().Request("$JS.API.DIRECT.GET."+events.WebhookAttemptsStream, []byte(`{"last_by_subj":"webhooks.attempt.ws_a.whk_1"}`), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var got webhooksv1.DeliveryAttempt
	if err := proto.Unmarshal(msg.Data, &got); err != nil {
		t.Fatal(err)
	}
	if got.GetAttemptId() != a.GetAttemptId() || len(got.GetRequestBody()) != 0 {
		t.Errorf("stored %q with a body of %d bytes; want %q without it", got.GetAttemptId(), len(got.GetRequestBody()), a.GetAttemptId())
	}
	if n := streamMsgs(js, events.WebhookAttemptsLogStream); n != 1 {
		t.Errorf("%d records on the durable log's queue; want 1", n)
	}
	// A record the server refuses for its size is not held for later.
	p.failed(nil, nats.NewMsg("webhooks.attempt.ws_a.whk_1"), nats.ErrMaxPayload)
	if held := p.held.Load(); held != 0 {
		t.Errorf("%d records held", held)
	}
}
