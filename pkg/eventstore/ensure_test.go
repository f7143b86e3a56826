package eventstore

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
)

// Ensuring a stream whose settings already match sends no update; a
// changed setting is applied.
func TestEnsureConfigUpdatesOnlyWhatDiffers(t *testing.T) {
	js, oneUpdate := watchUpdates(t, "WQ")
	ctx := context.Background()
	want := jetstream.StreamConfig{Name: "WQ", Subjects: []string{"wq.>"}, Retention: jetstream.WorkQueuePolicy,
		Storage: jetstream.FileStorage, Duplicates: time.Minute, Description: "jobs"}
	for range 3 {
		if _, err := EnsureConfig(ctx, js, want); err != nil {
			t.Fatal(err)
		}
	}
	want.Description = "run jobs"
	s, err := EnsureConfig(ctx, js, want)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.CachedInfo().Config.Description; got != "run jobs" {
		t.Fatalf("description after a change: %q", got)
	}
	oneUpdate()
}

// watchUpdates is a fresh server's JetStream, and a check that stream
// was updated exactly once since: the server sends advisories in order,
// so the first update advisory is the change's only if the unchanged
// ensures sent none.
func watchUpdates(t *testing.T, stream string) (js jetstream.JetStream, oneUpdate func()) {
	t.Helper()
	env := &testenv.Env{NATSURL: testenv.StartNATS(t)}
	nc := env.Conn(t)
	js, _ = jetstream.New(nc)
	updates, err := nc.SubscribeSync("$JS.EVENT.ADVISORY.STREAM.UPDATED." + stream)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return js, func() {
		t.Helper()
		if _, err := updates.NextMsg(5 * time.Second); err != nil {
			t.Fatalf("no advisory for the change: %v", err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		if n, _, _ := updates.Pending(); n != 0 {
			t.Fatalf("%d more updates of %s than the one change", n, stream)
		}
	}
}

// Ensuring a bucket whose settings already match updates nothing (its
// stream would race with the watchers being created on it); a changed
// setting is applied.
func TestEnsureKeyValueUpdatesOnlyWhatDiffers(t *testing.T) {
	js, oneUpdate := watchUpdates(t, "KV_SESSIONS")
	ctx := context.Background()
	want := jetstream.KeyValueConfig{Bucket: "SESSIONS", Description: "signed out", TTL: time.Hour, History: 1,
		Storage: jetstream.FileStorage, Replicas: 1}
	for range 3 {
		if _, err := EnsureKeyValue(ctx, js, want); err != nil {
			t.Fatal(err)
		}
	}
	want.TTL = 2 * time.Hour
	kv, err := EnsureKeyValue(ctx, js, want)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := kv.Status(ctx); err != nil || st.TTL() != 2*time.Hour {
		t.Fatalf("TTL after a change: %v, %v", st, err)
	}
	oneUpdate()
}

// notAnswering is a JetStream whose stream lookups time out a few times,
// as a new replicated stream does before its first leader.
type notAnswering struct {
	jetstream.JetStream
	timeouts int
}

func (n *notAnswering) Stream(ctx context.Context, name string) (jetstream.Stream, error) {
	if n.timeouts > 0 {
		n.timeouts--
		return nil, nats.ErrTimeout
	}
	return n.JetStream.Stream(ctx, name)
}

// A stream that does not answer yet is asked again until it does; a
// refusal is returned at once; an ended context ends the wait.
func TestEnsureConfigWaitsForAStreamThatCannotAnswerYet(t *testing.T) {
	env := &testenv.Env{NATSURL: testenv.StartNATS(t)}
	direct, _ := jetstream.New(env.Conn(t))
	ctx := context.Background()
	want := jetstream.StreamConfig{Name: "LATE", Subjects: []string{"late.>"}, Storage: jetstream.FileStorage}
	js := &notAnswering{JetStream: direct, timeouts: 3}
	if _, err := EnsureConfig(ctx, js, want); err != nil || js.timeouts != 0 {
		t.Fatalf("after 3 time-outs: %v (%d left)", err, js.timeouts)
	}
	bad := jetstream.StreamConfig{Name: "BAD", Subjects: []string{"late.>"}} // overlaps LATE: refused
	if _, err := EnsureConfig(ctx, direct, bad); err == nil || eventlog.IsUnavailable(err) {
		t.Fatalf("an overlapping stream: %v", err)
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := EnsureConfig(ended, &notAnswering{JetStream: direct, timeouts: 1 << 30}, want); err == nil {
		t.Fatal("an ended context still waits")
	}
}

// storeNotMade answers its first creates as nats-server does when the
// account's directory was removed from under them.
type storeNotMade struct {
	jetstream.JetStream
	failures int
}

func (s *storeNotMade) CreateStream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	if s.failures > 0 {
		s.failures--
		return nil, &jetstream.APIError{Code: 500, ErrorCode: streamCreateFailed, Description: storeFailed}
	}
	return s.JetStream.CreateStream(ctx, cfg)
}

// A create whose files the server could not make is asked again, and
// the stream made; another create error is returned at once.
func TestEnsureConfigAsksAgainWhenTheStoreWasNotMade(t *testing.T) {
	direct, ctx := testenv.JetStreamAt(t, testenv.StartNATS(t)), t.Context()
	js := &storeNotMade{JetStream: direct, failures: 2}
	if _, err := EnsureConfig(ctx, js, jetstream.StreamConfig{Name: "REMADE", Subjects: []string{"remade.>"}, Storage: jetstream.FileStorage}); err != nil || js.failures != 0 {
		t.Fatalf("after 2 failed creates: %v (%d left)", err, js.failures)
	}
	if _, err := direct.Stream(ctx, "REMADE"); err != nil {
		t.Fatalf("the stream asked again for was not made: %v", err)
	}
	other := &jetstream.APIError{Code: 500, ErrorCode: streamCreateFailed, Description: "subjects overlap"}
	if err := storeNotMadeYet(other); eventlog.IsUnavailable(err) {
		t.Fatal("a create error that is not the store's is asked again")
	}
}

// The suite's streams are ensured by name, with the subjects of the
// contract's table; a name outside it is refused before NATS is asked.
func TestEnsureEventStreamsByName(t *testing.T) {
	env := &testenv.Env{NATSURL: testenv.StartNATS(t)}
	js, _ := jetstream.New(env.Conn(t))
	ctx := context.Background()
	if err := EnsureEventStreams(ctx, js, 1, events.AgentsStream, events.PlatformStream); err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, events.AgentsStream)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.CachedInfo().Config.Subjects; !slices.Equal(got, []string{events.AgentsAll, events.SecretsAll}) {
		t.Fatalf("AGENTS subjects %v", got)
	}
	if err := EnsureEventStreams(ctx, js, 1, "NOT_A_STREAM"); err == nil || !strings.Contains(err.Error(), "NOT_A_STREAM") {
		t.Fatalf("an unknown stream: %v", err)
	}
}
