package adapters

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/agents/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/agents/app"
)

// The call log follows PLATFORM: a call_started or conversation_started
// records its agent's call at the envelope's time, or at the time the
// stream stored it when the envelope has none; other events, bodies that
// are not envelopes and agent ids that are not ids are skipped, and the
// follower goes on past them.
func TestFollowCallsRecordsWhatThePlatformReports(t *testing.T) {
	_, js, ctx := platform(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	publish := func(ws, event, body string) {
		t.Helper()
		if _, err := js.Publish(ctx, "platform.evt."+ws+"."+event, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	before := time.Now().Unix()
	publish("ws_a", "call_started", `{"event":"call_started","timestamp":"2027-01-02T03:04:05Z","data":{"call_id":"c1","agent_id":"agent_1"}}`)
	publish("ws_a", "conversation_started", `{"event":"conversation_started","data":{"conversation_id":"conv_1","agent_id":"agent_2"}}`)
	publish("ws_a", "conversation_ended", `{"event":"conversation_ended","timestamp":"2028-01-01T00:00:00Z","data":{"agent_id":"agent_1"}}`)
	publish("ws_a", "call_started", `not json`)
	publish("ws_a", "call_started", `{"event":"call_started","timestamp":"2029-01-01T00:00:00Z","data":{"agent_id":"agent 3"}}`)
	publish("ws_a", "call_started", `{"event":"call_started","timestamp":"2029-01-01T00:00:00Z","data":"agent_4"}`)
	publish("ws_b", "call_started", `{"event":"call_started","timestamp":"2027-01-02T03:04:06Z","data":{"agent_id":"agent_1"}}`)

	log := memory.NewCallLog()
	done := make(chan error, 1)
	go func() { done <- FollowCalls(ctx, js, log, slog.New(slog.DiscardHandler), nil) }()
	ids := []string{"agent_1", "agent_2", "agent 3", "agent_4"}
	// ws_b's call is the last message: once it is recorded, so is
	// everything before it (one consumer, in stream order).
	testkit.Eventually(t, 10*time.Second, "ws_b's call recorded", func() bool {
		b, _ := log.LastCalls(ctx, "ws_b", ids)
		return len(b) == 1
	})
	after := time.Now().Unix()
	b, _ := log.LastCalls(ctx, "ws_b", ids)
	if !maps.Equal(b, map[string]int64{"agent_1": time.Date(2027, 1, 2, 3, 4, 6, 0, time.UTC).Unix()}) {
		t.Fatalf("ws_b's calls: %v", b)
	}
	a, _ := log.LastCalls(ctx, "ws_a", ids)
	if len(a) != 2 || a["agent_1"] != time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC).Unix() || a["agent_2"] < before || a["agent_2"] > after {
		t.Fatalf("ws_a's calls: %v; want agent_1 at its timestamp, agent_2 at the stored time, nothing else", a)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("the follower stopped with %v", err)
	}
}

// A replica's own call log in memory holds every call: those the store's
// copy holds (read from the store: the stream is not read before what the
// copy acknowledged), those the copy has not stored yet (from the
// stream), and each new one.
func TestFollowCallsIntoHoldsTheStoreAndTheStream(t *testing.T) {
	env, js, ctx := platform(t)
	call := func(agent string, at int) {
		t.Helper()
		body := fmt.Sprintf(`{"event":"call_started","timestamp":%q,"data":{"agent_id":%q}}`, time.Unix(int64(at), 0).UTC().Format(time.RFC3339), agent)
		if _, err := js.Publish(ctx, "platform.evt.ws_a.call_started", []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	store := NewCallLog(env.Mongo(t).Database("agents_calls_into"))
	last := func(l app.CallLog) map[string]int64 {
		got, err := l.LastCalls(ctx, "ws_a", []string{"agent_1", "agent_2", "agent_3"})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	log := slog.New(slog.DiscardHandler)
	copyCtx, stopCopy := context.WithCancel(ctx)
	copied := make(chan error, 1)
	go func() { copied <- FollowCalls(copyCtx, js, store, log, nil) }()
	call("agent_1", 100)
	call("agent_2", 200)
	testkit.Eventually(t, 10*time.Second, "the first two calls in the store", func() bool { return len(last(store)) == 2 })
	stopCopy()
	<-copied
	call("agent_2", 300) // not copied: the copy has stopped
	call("agent_3", 400)

	mem := memory.NewCallLog()
	if err := FollowCallsInto(ctx, js, store, mem, log); err != nil {
		t.Fatal(err)
	}
	if got, want := last(mem), map[string]int64{"agent_1": 100, "agent_2": 300, "agent_3": 400}; !maps.Equal(got, want) {
		t.Fatalf("at start: %v; want %v", got, want)
	}
	call("agent_1", 500)
	testkit.Eventually(t, 10*time.Second, "a new call", func() bool { return last(mem)["agent_1"] == 500 })
}

// platform is an environment with the PLATFORM stream, and a context
// that ends with the test.
func platform(t *testing.T) (*testenv.Env, jetstream.JetStream, context.Context) {
	env := testenv.New(t)
	js := testenv.JetStreamAt(t, env.NATSURL)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := eventstore.EnsureEventStreams(ctx, js, 1, events.PlatformStream); err != nil {
		t.Fatal(err)
	}
	return env, js, ctx
}

// The store's call log dropped while nothing ran is replayed from the
// stream by the guard's first look, before anything reads it.
func TestACallLogDroppedIsReplayedAtStart(t *testing.T) {
	env, js, ctx := platform(t)
	for i, agent := range []string{"agent_1", "agent_2"} {
		body := fmt.Sprintf(`{"event":"call_started","timestamp":%q,"data":{"agent_id":%q}}`, time.Unix(int64(100*(i+1)), 0).UTC().Format(time.RFC3339), agent)
		if _, err := js.Publish(ctx, "platform.evt.ws_a.call_started", []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	store := NewCallLog(env.Mongo(t).Database("agents_calls_guarded"))
	last := func() map[string]int64 {
		got, err := store.LastCalls(ctx, "ws_a", []string{"agent_1", "agent_2"})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	log := slog.New(slog.DiscardHandler)
	stop := testkit.Background(t, func(ctx context.Context) error {
		defer GuardCalls(ctx, js, store, log, nil)()
		return FollowCalls(ctx, js, store, log, nil)
	})
	// Stored, and acknowledged: an event the copy stored but had not
	// acknowledged when it stopped is delivered to it again at its next
	// start, and is not the guard's to replay.
	testkit.Eventually(t, 10*time.Second, "both calls in the store, and acknowledged", func() bool {
		if len(last()) != 2 {
			return false
		}
		durable, err := js.Consumer(ctx, events.PlatformStream, CallsDurable) // its info as of now
		return err == nil && durable.CachedInfo().AckFloor.Stream >= 2
	})
	stop()
	if err := store.Calls.Drop(ctx); err != nil {
		t.Fatal(err)
	}

	GuardCalls(ctx, js, store, log, nil)
	if got, want := last(), map[string]int64{"agent_1": 100, "agent_2": 200}; !maps.Equal(got, want) {
		t.Fatalf("once guarded again: %v; want %v", got, want)
	}
}

// A batch of calls of many agents already called is recorded, each
// agent's later time kept. On the embedded store a command of more than
// about a hundred such updates never ended (each held a read until the
// command's end), so a replay of the call log at restart never did.
func TestTheStoresCallLogRecordsABatchOfManyKnownAgents(t *testing.T) {
	env := testenv.New(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	log := NewCallLog(env.Mongo(t).Database("agents_calls_many"))
	const agents = 200
	batch := func(at int64) []app.Call {
		calls := make([]app.Call, agents)
		for i := range calls {
			calls[i] = app.Call{WorkspaceID: "ws_a", AgentID: fmt.Sprintf("agent_%03d", i), AtUnix: at + int64(i%2)*100}
		}
		return calls
	}
	for _, at := range []int64{1000, 500} { // made, then an older call of each
		if err := log.Record(ctx, batch(at)); err != nil {
			t.Fatalf("recording %d agents' calls at %d: %v", agents, at, err)
		}
	}
	got, err := log.LastCalls(ctx, "ws_a", []string{"agent_000", "agent_001", "agent_199"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int64{"agent_000": 1000, "agent_001": 1100, "agent_199": 1100}; !maps.Equal(got, want) {
		t.Fatalf("last calls %v, want %v", got, want)
	}
}
