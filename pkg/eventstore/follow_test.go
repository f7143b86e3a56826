package eventstore

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

// A stream deleted and made again (a kept work stream, made again empty;
// a restore) numbers its records from 1 again. Its followers follow the
// new stream from its start: before, the client library's ordered
// consumer, reset, waited for records after the last one it had seen of
// the old stream, and the followers (the delivery log's, the webhooks'
// auto-disable) saw nothing new, with no error, for good.
func TestAFollowerFollowsAStreamMadeAnewFromItsStart(t *testing.T) {
	ctx := context.Background()
	js := testenv.JetStreamAt(t, testenv.StartNATS(t))
	cfg := jetstream.StreamConfig{Name: "ATTEMPTS", Subjects: []string{"attempts.>"}}
	if _, err := js.CreateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	publish := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if _, err := js.Publish(ctx, fmt.Sprintf("attempts.%d", i), []byte(fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	publish(0, 20)
	var mu sync.Mutex
	var seen []string
	f, err := Follow(t.Context(), js, "ATTEMPTS", nil, false, func(rec Record) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, string(rec.Data))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	has := func(data string) bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(seen, data)
	}
	testkit.Eventually(t, 10*time.Second, "the first stream's records applied", func() bool { return has("19") })

	testenv.RemakeStream(t, js, "ATTEMPTS", func(ctx context.Context) error {
		_, err := js.CreateStream(ctx, cfg)
		return err
	})
	publish(100, 105)
	testkit.Eventually(t, 30*time.Second, "the new stream's records applied", func() bool { return has("104") })
	mu.Lock()
	defer mu.Unlock()
	if n := len(seen); n != 25 {
		t.Errorf("%d records applied; want the 20 of the first stream and the 5 of the new one, once each: %v", n, seen)
	}
}

// FollowState empties the state it keeps (its reset) when the stream is
// made anew, before the new stream's records: each aggregate's state
// keeps its sequence and refuses older ones, and the new stream numbers
// from 1 again.
func TestFollowStateResetsWhenTheStreamIsMadeAnew(t *testing.T) {
	js, create := agentEvents(t)
	create("agent_old")
	var mu sync.Mutex
	held := map[string]uint64{}
	resets := 0
	err := FollowState(t.Context(), js, events.AgentsStream, []string{events.AgentsAll}, slog.New(slog.DiscardHandler), func(seq uint64, msg proto.Message) {
		if a, ok := events.StateOf[*agentsv1.Agent](msg); ok {
			mu.Lock()
			held[a.GetAgentId()] = seq
			mu.Unlock()
		}
	}, func() {
		mu.Lock()
		clear(held)
		resets++
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	testenv.RemakeStream(t, js, events.AgentsStream, func(ctx context.Context) error {
		return EnsureEventStreams(ctx, js, 1, events.AgentsStream)
	})
	create("agent_new")
	testkit.Eventually(t, 60*time.Second, "the new stream's agent held", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return held["agent_new"] > 0
	})
	mu.Lock()
	defer mu.Unlock()
	if _, ok := held["agent_old"]; ok || resets != 1 {
		t.Errorf("after the stream was made anew: %v held, %d resets; want agent_new alone, after one", held, resets)
	}
}

// FollowRecordsExcept hands apply only what the state does not hold yet:
// an event its known test says is held (the stream's copy of a write the
// replica applied inline) is neither decoded nor applied, and the rest
// are, in order.
func TestFollowRecordsExceptSkipsWhatTheStateHolds(t *testing.T) {
	js, appendCreated := agentEvents(t)
	var mu sync.Mutex
	held := map[string]uint64{} // agent subject → sequence, as a replica's state
	create := func(id string, inline bool) {
		t.Helper()
		if inline { // held before the stream has it: the follower may see it first
			subject, _ := events.AgentSubject("ws", id)
			mu.Lock()
			held[subject] = AnySeq
			mu.Unlock()
		}
		appendCreated(id)
	}
	create("agent_1", true)
	create("agent_2", false)
	var applied []string
	known := func(subject string, seq uint64) bool {
		mu.Lock()
		defer mu.Unlock()
		return held[subject] >= seq
	}
	err := FollowRecordsExcept(t.Context(), js, events.AgentsStream, []string{events.AgentsAll}, slog.New(slog.DiscardHandler), known, func(rec Record) {
		msg, err := esproto.Decode(rec)
		if err != nil {
			t.Error(err)
			return
		}
		if a, ok := events.StateOf[*agentsv1.Agent](msg); ok {
			mu.Lock()
			applied = append(applied, a.GetAgentId())
			mu.Unlock()
		}
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	create("agent_3", true)
	create("agent_4", false)
	testkit.Eventually(t, 10*time.Second, "agent_4 applied", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(applied, "agent_4")
	})
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(applied, []string{"agent_2", "agent_4"}) {
		t.Errorf("applied %v; want agent_2 and agent_4 alone, the state held the others", applied)
	}
}

// agentEvents starts a NATS server with the AGENTS stream and answers it
// with a function that appends an agent's creation to it.
func agentEvents(t *testing.T) (jetstream.JetStream, func(id string)) {
	ctx := context.Background()
	js := testenv.JetStreamAt(t, testenv.StartNATS(t))
	if err := EnsureEventStreams(ctx, js, 1, events.AgentsStream); err != nil {
		t.Fatal(err)
	}
	store := New(js, events.AgentsStream)
	return js, func(id string) {
		t.Helper()
		subject, err := events.AgentSubject("ws", id)
		if err != nil {
			t.Fatal(err)
		}
		meta := esproto.Meta(ctx, "ws", "", time.Now())
		if _, err := esproto.Append(ctx, store, subject, AnySeq, meta, &agentsv1.AgentCreated{Meta: meta, Agent: &agentsv1.Agent{AgentId: id, WorkspaceId: "ws"}}); err != nil {
			t.Fatal(err)
		}
	}
}
