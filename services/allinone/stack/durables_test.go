package stack

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/consume"
	"github.com/voiceai-platform/voiceai/pkg/embedded"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	events "github.com/voiceai-platform/voiceai/proto-events"
	"github.com/voiceai-platform/voiceai/services/webhooks/dispatcher"
)

// Every durable consumer of the platform deleted at once (an operator's
// slip, a restore from backup) is made again by the processes consuming
// it: the platform's work goes on through the gateway. A webhook is
// delivered (fan-out, delivery queue, delivery log), a ticket is raised
// and a test runs to completion, and every durable is back with nothing
// left to handle (the store copies, the QA worker's, the call log...).
// Nothing stored before is handled again: the receiver gets the new
// event alone.
func TestDeletedDurablesAreMadeAgainAndTheWorkGoesOn(t *testing.T) {
	t.Parallel()
	s := startAdmin(t, localHooks)
	hookID, delivered := countingHook(t, s)
	sendCallEvent(t, s, "call_started", "before")
	eventually(t, 30*time.Second, "the first event delivered", func() bool { return delivered.Load() == 1 })
	logLines := func() int {
		r := call(t, s, "GET", "/v1/voiceai/webhooks/"+hookID+"/logs", adminKey, "")
		lines, _ := r.JSON(t)["recent_deliveries"].([]any)
		return len(lines)
	}
	eventually(t, 30*time.Second, "the first delivery logged", func() bool { return logLines() == 1 })

	js := testenv.JetStreamAt(t, s.NATSURL)
	ctx := context.Background()
	deleted := deleteDurables(t, js)
	if deleted < 10 {
		t.Fatalf("deleted %d durables; the platform has more", deleted)
	}

	sendCallEvent(t, s, "call_started", "after")
	eventually(t, 30*time.Second, "the event after the deletion delivered and logged", func() bool { return delivered.Load() >= 2 && logLines() >= 2 })
	agent := agentWithTicket(t, s)
	test := createTest(t, s, hoursTest)
	awaitCompleted(t, s, startInvocation(t, s, adminKey, agent, `{"tests":[{"test_id":"`+test+`"}]}`), 60*time.Second)
	eventually(t, 30*time.Second, "the durables back, each with nothing left to handle", func() bool {
		back := 0
		for name := range js.StreamNames(ctx).Name() {
			str, err := js.Stream(ctx, name)
			if err != nil {
				return false
			}
			for info := range str.ListConsumers(ctx).Info() {
				if info.Config.Durable == "" {
					continue
				}
				if info.NumPending > 0 || info.NumAckPending > 0 {
					return false
				}
				back++
			}
		}
		return back >= deleted
	})
	if n := delivered.Load(); n != 2 {
		t.Fatalf("the receiver got %d deliveries; want 2 (the history was delivered again)", n)
	}
}

// Every durable deleted while the platform was stopped (a maintenance
// slip, streams moved to another cluster without their consumers) is
// made at the next start after the floor its consumers last kept, not
// from its stream's first message: the webhook fan-out does not queue the
// history again, and the work goes on.
func TestDurablesDeletedWhileStoppedStartWhereTheyWere(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, dir, func(c *Config) { administered(c, []func(*Config){localHooks}) })
	_, delivered := countingHook(t, s)
	sendCallEvent(t, s, "call_started", "before")
	eventually(t, 30*time.Second, "the first event delivered", func() bool { return delivered.Load() == 1 })

	// The fan-out's floor kept (its consumers read it every 5 s).
	ctx := context.Background()
	js := testenv.JetStreamAt(t, s.NATSURL)
	fanout := consume.FloorKey(events.PlatformStream, dispatcher.FanoutPlatformDurable)
	var kept struct {
		Floor uint64 `json:"floor"`
	}
	eventually(t, 30*time.Second, "the fan-out's floor kept", func() bool {
		cons, err := js.Consumer(ctx, events.PlatformStream, dispatcher.FanoutPlatformDurable)
		if err != nil {
			return false
		}
		kv, err := js.KeyValue(ctx, consume.FloorsBucket)
		if err != nil {
			return false
		}
		e, err := kv.Get(ctx, fanout)
		return err == nil && json.Unmarshal(e.Value(), &kept) == nil && kept.Floor > 0 && kept.Floor >= cons.CachedInfo().AckFloor.Stream
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	ns, err := embedded.StartNATS(embedded.NATSOptions{StoreDir: filepath.Join(dir, "nats"), Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	deleted := deleteDurables(t, testenv.JetStreamAt(t, ns.ClientURL()))
	ns.Shutdown()
	ns.WaitForShutdown()
	if deleted < 10 {
		t.Fatalf("deleted %d durables; the platform has more", deleted)
	}

	s = start(t, dir, func(c *Config) { administered(c, []func(*Config){localHooks}) })
	js = testenv.JetStreamAt(t, s.NATSURL)
	cons, err := js.Consumer(ctx, events.PlatformStream, dispatcher.FanoutPlatformDurable)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := cons.CachedInfo().Config; cfg.DeliverPolicy != jetstream.DeliverByStartSequencePolicy || cfg.OptStartSeq != kept.Floor+1 {
		t.Fatalf("the fan-out made at start as %v from %d; want from sequence %d, after its kept floor", cfg.DeliverPolicy, cfg.OptStartSeq, kept.Floor+1)
	}
	sendCallEvent(t, s, "call_started", "after")
	eventually(t, 30*time.Second, "the event after the restart delivered", func() bool { return delivered.Load() >= 2 })
	agentWithTicket(t, s)
	if n := delivered.Load(); n != 2 {
		t.Fatalf("the receiver got %d deliveries; want 2", n)
	}
}

// deleteDurables deletes every durable consumer of every stream and says
// how many.
func deleteDurables(t *testing.T, js jetstream.JetStream) int {
	t.Helper()
	ctx := context.Background()
	deleted := 0
	for name := range js.StreamNames(ctx).Name() {
		str, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		for info := range str.ListConsumers(ctx).Info() {
			if info.Config.Durable == "" {
				continue // ordered consumers: the client library makes them again
			}
			if err := js.DeleteConsumer(ctx, name, info.Name); err != nil {
				t.Fatal(err)
			}
			deleted++
		}
	}
	return deleted
}

// The streams of passing work deleted under the platform (the runners'
// TESTJOBS, the dispatchers' WEBHOOK_DELIVERIES, the attempt streams the
// delivery log is fed by) are made again by the first process that finds
// them gone: a test run and a webhook delivery after the deletion go
// through, and the delivery is in the delivery log, where before each
// waited for a restart.
func TestWorkQueuesDeletedAreMadeAgainAndTheWorkGoesOn(t *testing.T) {
	t.Parallel()
	s := startAdmin(t, localHooks)
	hookID, delivered := countingHook(t, s)
	agent := agentWith(t, s)
	test := createTest(t, s, hoursTest)

	js := testenv.JetStreamAt(t, s.NATSURL)
	ctx := context.Background()
	work := []string{events.TestJobsStream, events.WebhookDeliveriesStream, events.WebhookAttemptsStream, events.WebhookAttemptsLogStream}
	for _, stream := range work {
		if err := js.DeleteStream(ctx, stream); err != nil {
			t.Fatal(err)
		}
	}
	sendCallEvent(t, s, "call_started", "after")
	awaitCompleted(t, s, startInvocation(t, s, adminKey, agent, `{"tests":[{"test_id":"`+test+`"}]}`), 60*time.Second)
	eventually(t, 30*time.Second, "the event delivered", func() bool { return delivered.Load() == 1 })
	eventually(t, 30*time.Second, "the delivery in the delivery log", func() bool {
		r := call(t, s, "GET", "/v1/voiceai/webhooks/"+hookID+"/logs", adminKey, "")
		lines, _ := r.JSON(t)["recent_deliveries"].([]any)
		return len(lines) == 1
	})
	for _, stream := range work {
		if _, err := js.Stream(ctx, stream); err != nil {
			t.Fatalf("%s: %v", stream, err)
		}
	}
}

// countingHook subscribes a receiver that counts what it is sent to
// call_started, and answers the webhook's id and the count.
func countingHook(t *testing.T, s *Stack) (string, *atomic.Int32) {
	t.Helper()
	delivered := new(atomic.Int32)
	rcv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { delivered.Add(1) }))
	t.Cleanup(rcv.Close)
	return createWebhook(t, s, `{"url":"`+rcv.URL+`/hook","events":["call_started"]}`), delivered
}
