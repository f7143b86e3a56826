package aggregate

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/eventlog/memlog"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
)

var errNotFound, errConflict = errors.New("not found"), errors.New("conflict")

// openStore is an empty event log of agents that remembers command ids
// for window (0: the default).
type openStore func(t *testing.T, window time.Duration) eventlog.Store

func onJetStream(t *testing.T, window time.Duration) eventlog.Store {
	js := testenv.JetStreamAt(t, testenv.StartNATS(t))
	if _, err := eventstore.EnsureStream(context.Background(), js, eventstore.StreamConfig{Name: events.AgentsStream, Subjects: []string{events.AgentsAll}, DedupWindow: window}); err != nil {
		t.Fatal(err)
	}
	return eventstore.New(js, events.AgentsStream)
}

func inMemory(_ *testing.T, window time.Duration) eventlog.Store {
	s := memlog.New()
	if window > 0 {
		s.Window = window
	}
	return s
}

// The repository's rules hold on every event log adapter.
func TestRepoOnJetStream(t *testing.T) { runRepoCases(t, onJetStream) }
func TestRepoInMemory(t *testing.T)    { runRepoCases(t, inMemory) }

func runRepoCases(t *testing.T, open openStore) {
	cases := []struct {
		name string
		run  func(*testing.T, openStore)
	}{
		{"CreateGetUpdateDelete", testCreateGetUpdateDelete},
		{"RetriedCreateAnswersTheFirst", testRetriedCreateAnswersTheFirst},
		{"KeyReusedOnAnotherIDAnswersTheFirstCreate", testKeyReusedOnAnotherIDAnswersTheFirstCreate},
		{"ConcurrentUpdatesRetryAgainstFreshState", testConcurrentUpdatesRetryAgainstFreshState},
		{"KeyedUpdateReplayAnswersTheFirstResult", testKeyedUpdateReplayAnswersTheFirstResult},
		{"ConcurrentCopiesOfAKeyedUpdateApplyOnce", testConcurrentCopiesOfAKeyedUpdateApplyOnce},
		{"KeyedReplayOfADeletion", testKeyedReplayOfADeletion},
		{"KeyedReplayBeyondTheDuplicateWindow", testKeyedReplayBeyondTheDuplicateWindow},
		{"MadeReadsOnceUnlessDeleted", testMadeReadsOnceUnlessDeleted},
		{"KeyOfAnotherRequestIsRefused", testKeyOfAnotherRequestIsRefused},
		{"KeyOfAnotherRequestIsRefusedBeyondTheWindow", testKeyOfAnotherRequestIsRefusedBeyondTheWindow},
		{"LatestAndGetSince", testLatestAndGetSince},
		{"ChangeAllStoresEveryChangeOrNone", testChangeAllStoresEveryChangeOrNone},
		{"ChangeAllRetriesAgainstFreshStates", testChangeAllRetriesAgainstFreshStates},
		{"KeyedChangeAllReplayAnswersTheFirstResult", testKeyedChangeAllReplay},
		{"KeyedChangeManyReplayChangesNothingAgain", testKeyedChangeManyReplay},
		{"ChangeWithStoresTheOthersWithIt", testChangeWithStoresTheOthersWithIt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, open) })
	}
}

func newRepo(t *testing.T, open openStore) (*Repo[*agentsv1.Agent], *sync.Map) {
	t.Helper()
	return newRepoWindow(t, open, 0)
}

// newRepoWindow is a repository over a log that remembers command ids for
// window (0: the default).
func newRepoWindow(t *testing.T, open openStore, window time.Duration) (*Repo[*agentsv1.Agent], *sync.Map) {
	t.Helper()
	projected := &sync.Map{}
	return &Repo[*agentsv1.Agent]{
		Env: Env{
			Store: open(t, window),
			Log:   slog.New(slog.DiscardHandler), Now: time.Now,
		},
		Subject: events.AgentSubject,
		Gone:    func(a *agentsv1.Agent) bool { return a.DeletedAtUnix != nil },
		Touch:   func(a *agentsv1.Agent, now time.Time) { a.UpdatedAtUnix = now.Unix() },
		Project: func(_ context.Context, seq uint64, a *agentsv1.Agent) error {
			projected.Store(a.GetAgentId(), seq)
			return nil
		},
		NotFound: errNotFound,
	}, projected
}

// deleteAgent is the mutation that deletes an agent (a tombstone).
func deleteAgent(next *agentsv1.Agent, meta *commonv1.EventMeta) (proto.Message, error) {
	now := int64(1)
	next.DeletedAtUnix = &now
	return &agentsv1.AgentDeleted{Meta: meta, Agent: next}, nil
}

func create(t *testing.T, r *Repo[*agentsv1.Agent], id, commandID string) (*agentsv1.Agent, bool) {
	t.Helper()
	ctx := context.Background()
	meta := esproto.Meta(ctx, "ws", commandID, time.Now())
	a := &agentsv1.Agent{AgentId: id, WorkspaceId: "ws", Name: "first"}
	got, dup, err := r.Create(ctx, "ws", id, meta, &agentsv1.AgentCreated{Meta: meta, Agent: a}, a)
	if err != nil {
		t.Fatal(err)
	}
	return got, dup
}

func testCreateGetUpdateDelete(t *testing.T, open openStore) {
	r, projected := newRepo(t, open)
	ctx := context.Background()
	create(t, r, "agent_1", "")
	if _, ok := projected.Load("agent_1"); !ok {
		t.Fatal("create was not projected inline")
	}
	got, seq, err := r.Get(ctx, "ws", "agent_1")
	if err != nil || got.GetName() != "first" || seq == 0 {
		t.Fatalf("get: %v %d %v", got, seq, err)
	}
	if _, _, err := r.Get(ctx, "other_ws", "agent_1"); !errors.Is(err, errNotFound) {
		t.Fatalf("another workspace must not see it: %v", err)
	}
	if _, _, err := r.Get(ctx, "ws", "bad.id"); !errors.Is(err, errNotFound) {
		t.Fatalf("an id unfit for a subject is simply not found: %v", err)
	}
	upd, err := r.Update(ctx, "ws", "agent_1", "", func(next *agentsv1.Agent, meta *commonv1.EventMeta) (proto.Message, error) {
		next.Name = "second"
		return &agentsv1.AgentUpdated{Meta: meta, Agent: next}, nil
	})
	if err != nil || upd.GetName() != "second" || upd.GetUpdatedAtUnix() == 0 {
		t.Fatalf("update: %v %v", upd, err)
	}
	if _, err := r.Update(ctx, "ws", "agent_1", "", deleteAgent); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Get(ctx, "ws", "agent_1"); !errors.Is(err, errNotFound) {
		t.Fatalf("a deleted aggregate reads as missing: %v", err)
	}
}

func testRetriedCreateAnswersTheFirst(t *testing.T, open openStore) {
	r, projected := newRepo(t, open)
	first, dup := create(t, r, "agent_1", "cmd-1")
	// The first attempt's process died after appending, before projecting.
	projected.Delete("agent_1")
	again, dup2 := create(t, r, "agent_1", "cmd-1")
	if dup || !dup2 || !proto.Equal(first, again) {
		t.Fatalf("first dup=%v, retry dup=%v, equal=%v", dup, dup2, proto.Equal(first, again))
	}
	if _, ok := projected.Load("agent_1"); !ok {
		t.Fatal("a retried create answered as a duplicate must be projected, so listings show it at once")
	}
}

// A command id sent again to create another aggregate answers the first
// create, even after that aggregate is gone, and makes nothing, where no
// request's fingerprint tells the two apart (a command no keyed request
// issued, or one recorded before fingerprints).
func testKeyReusedOnAnotherIDAnswersTheFirstCreate(t *testing.T, open openStore) {
	r, _ := newRepo(t, open)
	first, _ := create(t, r, "agent_1", "cmd-1")
	if _, err := r.Update(context.Background(), "ws", "agent_1", "", deleteAgent); err != nil {
		t.Fatal(err)
	}
	again, dup := create(t, r, "agent_2", "cmd-1")
	if !dup || !proto.Equal(first, again) {
		t.Fatalf("the key on agent_2 answered dup=%v %v, want the first create %v", dup, again, first)
	}
	if _, _, err := r.Get(context.Background(), "ws", "agent_2"); !errors.Is(err, errNotFound) {
		t.Fatalf("agent_2 was made by a replayed key: %v", err)
	}
}

// keyed is ctx serving the keyed request whose fingerprint is digest.
func keyed(digest string) context.Context {
	return esproto.WithRequestDigest(context.Background(), digest)
}

// createIn is create for the request in ctx.
func createIn(ctx context.Context, r *Repo[*agentsv1.Agent], id, commandID, name string) (*agentsv1.Agent, bool, error) {
	meta := esproto.Meta(ctx, "ws", commandID, time.Now())
	a := &agentsv1.Agent{AgentId: id, WorkspaceId: "ws", Name: name}
	return r.Create(ctx, "ws", id, meta, &agentsv1.AgentCreated{Meta: meta, Agent: a}, a)
}

// wantReused fails unless err is the refusal of a key first used for
// another request.
func wantReused(t *testing.T, what string, err error) {
	t.Helper()
	var v apperr.ValidationErrors
	if !errors.As(err, &v) || len(v) != 1 || v[0].Type != "idempotency_key_reused" {
		t.Fatalf("%s: %v, want the key refused as another request's", what, err)
	}
}

// A key sent again with the request it first went with is a replay,
// answered with the first result; with another request (another body, or
// another aggregate of the same operation) it is refused, never answered
// with the first request's result, and changes nothing: on create, on a
// keyed create's look-up (Made), on update whether the key's change is
// the last or an older one, and on a change a replay would fail.
func testKeyOfAnotherRequestIsRefused(t *testing.T, open openStore) {
	r, _ := newRepo(t, open)
	a, b := keyed("digest-a"), keyed("digest-b")
	first, _, err := createIn(a, r, "agent_1", "cmd-1", "first")
	if err != nil {
		t.Fatal(err)
	}
	if again, dup, err := createIn(a, r, "agent_1", "cmd-1", "first"); err != nil || !dup || !proto.Equal(again, first) {
		t.Fatalf("the same request again: %v dup=%v %v, want the first create", again, dup, err)
	}
	_, _, err = createIn(b, r, "agent_1", "cmd-1", "other")
	wantReused(t, "another body", err)
	_, _, err = createIn(b, r, "agent_2", "cmd-1", "other")
	wantReused(t, "another aggregate", err)
	if _, _, err := r.Get(context.Background(), "ws", "agent_2"); !errors.Is(err, errNotFound) {
		t.Fatalf("agent_2 was made: %v", err)
	}
	_, _, _, err = r.Made(b, "ws", "agent_1", "cmd-1")
	wantReused(t, "Made for another request", err)
	if got, _, ok, err := r.Made(a, "ws", "agent_1", "cmd-1"); err != nil || !ok || !proto.Equal(got, first) {
		t.Fatalf("Made for the same request: %v ok=%v %v", got, ok, err)
	}

	var calls atomic.Int64
	renamed, err := r.Update(a, "ws", "agent_1", "cmd-2", rename("second", &calls))
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Update(b, "ws", "agent_1", "cmd-2", rename("other", &calls))
	wantReused(t, "update, the key's change the last", err)
	if _, err := r.Update(context.Background(), "ws", "agent_1", "", rename("third", &calls)); err != nil {
		t.Fatal(err)
	}
	_, err = r.Update(b, "ws", "agent_1", "cmd-2", rename("other", &calls))
	wantReused(t, "update, the key's change an older one", err)
	_, err = r.Update(b, "ws", "agent_1", "cmd-2", refuse)
	wantReused(t, "update a replay would fail", err)
	_, _, _, err = r.Made(b, "ws", "agent_1", "cmd-1")
	wantReused(t, "Made of a create changed since", err)
	if again, err := r.Update(a, "ws", "agent_1", "cmd-2", rename("other", &calls)); err != nil || !proto.Equal(again, renamed) {
		t.Fatalf("the same update again: %v %v, want its first result %v", again, err, renamed)
	}
	if cur, _, _ := r.Get(context.Background(), "ws", "agent_1"); cur.GetName() != "third" {
		t.Fatalf("the refused requests changed the agent: %v", cur)
	}
}

// Beyond the stream's duplicate window, a key sent with another request
// is still told apart, from the aggregate's last event or its history.
func testKeyOfAnotherRequestIsRefusedBeyondTheWindow(t *testing.T, open openStore) {
	const window = 200 * time.Millisecond
	r, _ := newRepoWindow(t, open, window)
	a, b := keyed("digest-a"), keyed("digest-b")
	if _, _, err := createIn(a, r, "agent_1", "cmd-1", "first"); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	if _, err := r.Update(a, "ws", "agent_1", "cmd-2", rename("second", &calls)); err != nil {
		t.Fatal(err)
	}
	forgotten := probeWindow(t, r)
	forgotten()
	_, err := r.Update(b, "ws", "agent_1", "cmd-2", rename("other", &calls))
	wantReused(t, "update, the key's change the last", err)
	_, _, err = createIn(b, r, "agent_1", "cmd-1", "other")
	wantReused(t, "create", err)
	if cur, _, _ := r.Get(context.Background(), "ws", "agent_1"); cur.GetName() != "second" {
		t.Fatalf("the refused requests changed the agent: %v", cur)
	}
}

// readCounter counts the reads a repository makes of its log.
type readCounter struct {
	eventlog.Store
	reads atomic.Int64
}

func (c *readCounter) Last(ctx context.Context, subject string) (eventlog.Record, bool, error) {
	c.reads.Add(1)
	return c.Store.Last(ctx, subject)
}

func (c *readCounter) FindCommand(ctx context.Context, subject, commandID string) (eventlog.Record, bool, error) {
	c.reads.Add(1)
	return c.Store.FindCommand(ctx, subject, commandID)
}

// Made answers a first attempt (nothing made) and a live aggregate with
// one read, as every keyed create asks it first; a deleted one as its
// create left it, from the history.
func testMadeReadsOnceUnlessDeleted(t *testing.T, open openStore) {
	r, _ := newRepo(t, open)
	counted := &readCounter{Store: r.Store}
	r.Store = counted
	ctx := context.Background()
	if _, _, ok, _ := r.Made(ctx, "ws", "agent_1", "cmd-1"); ok || counted.reads.Load() != 1 {
		t.Fatalf("nothing made yet: ok=%v after %d reads, want false after 1", ok, counted.reads.Load())
	}
	create(t, r, "agent_1", "cmd-1")
	counted.reads.Store(0)
	if a, seq, ok, _ := r.Made(ctx, "ws", "agent_1", "cmd-1"); !ok || seq == 0 || a.GetName() != "first" || counted.reads.Load() != 1 {
		t.Fatalf("made: %v seq %d ok=%v after %d reads, want it live after 1", a, seq, ok, counted.reads.Load())
	}
	if _, err := r.Update(ctx, "ws", "agent_1", "", deleteAgent); err != nil {
		t.Fatal(err)
	}
	if a, seq, ok, _ := r.Made(ctx, "ws", "agent_1", "cmd-1"); !ok || seq != 0 || a.GetName() != "first" || a.DeletedAtUnix != nil {
		t.Fatalf("deleted since: %v seq %d ok=%v, want its create's state at sequence 0", a, seq, ok)
	}
	if _, _, ok, _ := r.Made(ctx, "ws", "agent_1", "cmd-other"); ok {
		t.Fatal("another command made nothing here")
	}
}

// Latest answers the last event's record beside the state; GetSince
// takes a read older than the event its caller holds for a stale one,
// and a deletion for what it is.
func testLatestAndGetSince(t *testing.T, open openStore) {
	r, _ := newRepo(t, open)
	ctx := context.Background()
	create(t, r, "agent_1", "")
	a, rec, err := r.Latest(ctx, "ws", "agent_1")
	if err != nil || a.GetName() != "first" || rec.Seq == 0 || rec.Type != events.TypeAgentCreated || rec.Time.IsZero() {
		t.Fatalf("latest: %v %+v %v, want the agent with its create's record", a, rec, err)
	}
	created := rec.Seq
	if a, seq, err := r.GetSince(ctx, "ws", "agent_1", created); err != nil || seq != created || a.GetName() != "first" {
		t.Fatalf("since its own event: %v %d %v", a, seq, err)
	}
	// The caller holds an event the store does not answer yet.
	if _, seq, err := r.GetSince(ctx, "ws", "agent_1", created+1); !errors.Is(err, ErrStaleRead) || seq != created {
		t.Fatalf("a read older than the event in hand: sequence %d, %v; want %d and a stale read", seq, err, created)
	}
	if _, _, err := r.GetSince(ctx, "ws", "agent_9", 1); !errors.Is(err, ErrStaleRead) {
		t.Fatalf("none read of an aggregate whose event is in hand: %v, want a stale read", err)
	}
	if _, err := r.Update(ctx, "ws", "agent_1", "", deleteAgent); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.GetSince(ctx, "ws", "agent_1", created); !errors.Is(err, errNotFound) {
		t.Fatalf("deleted since: %v, want not found", err)
	}
	if _, _, err := r.Latest(ctx, "ws", "agent_1"); !errors.Is(err, errNotFound) {
		t.Fatalf("latest of a deleted aggregate: %v, want not found", err)
	}
}

func testConcurrentUpdatesRetryAgainstFreshState(t *testing.T, open openStore) {
	r, _ := newRepo(t, open)
	create(t, r, "agent_1", "")
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := r.Update(context.Background(), "ws", "agent_1", "", func(next *agentsv1.Agent, meta *commonv1.EventMeta) (proto.Message, error) {
				next.Tags = append(next.Tags, "t")
				return &agentsv1.AgentUpdated{Meta: meta, Agent: next}, nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got, _, _ := r.Get(context.Background(), "ws", "agent_1")
	if len(got.GetTags()) != 4 {
		t.Fatalf("%d of 4 concurrent updates landed", len(got.GetTags()))
	}
}

// rename is a mutation that names the agent, counted in calls.
func rename(name string, calls *atomic.Int64) Mutation[*agentsv1.Agent] {
	return func(next *agentsv1.Agent, meta *commonv1.EventMeta) (proto.Message, error) {
		calls.Add(1)
		next.Name = name
		next.Tags = append(next.Tags, name)
		return &agentsv1.AgentUpdated{Meta: meta, Agent: next}, nil
	}
}

// refuse is a mutation that fails, as a replay of a change no longer
// allowed does (a transition already made).
func refuse(*agentsv1.Agent, *commonv1.EventMeta) (proto.Message, error) {
	return nil, errConflict
}

func update(t *testing.T, r *Repo[*agentsv1.Agent], commandID string, m Mutation[*agentsv1.Agent]) *agentsv1.Agent {
	t.Helper()
	got, err := r.Update(context.Background(), "ws", "agent_1", commandID, m)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func seqOf(t *testing.T, r *Repo[*agentsv1.Agent]) uint64 {
	t.Helper()
	_, seq, err := r.Get(context.Background(), "ws", "agent_1")
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

// A keyed change sent again answers the state its first attempt left and
// appends nothing, even when the replay would change something else or
// would now fail, and whether or not other changes came in between.
func testKeyedUpdateReplayAnswersTheFirstResult(t *testing.T, open openStore) {
	r, projected := newRepo(t, open)
	create(t, r, "agent_1", "")
	var calls atomic.Int64
	first := update(t, r, "cmd-1", rename("second", &calls))
	seq := seqOf(t, r)

	projected.Delete("agent_1") // as if the first attempt died before projecting
	if again := update(t, r, "cmd-1", rename("other", &calls)); !proto.Equal(again, first) || seqOf(t, r) != seq {
		t.Fatalf("replay with another change: %v (seq %d, was %d), want the first result %v", again, seqOf(t, r), seq, first)
	}
	if _, ok := projected.Load("agent_1"); !ok {
		t.Fatal("a replay must project the state it answers")
	}

	update(t, r, "", rename("third", &calls)) // another writer's change
	seq = seqOf(t, r)
	for name, m := range map[string]Mutation[*agentsv1.Agent]{"another change": rename("fourth", &calls), "a change that fails now": refuse} {
		if again := update(t, r, "cmd-1", m); !proto.Equal(again, first) || seqOf(t, r) != seq {
			t.Fatalf("replay after another change, with %s: %v, want the first result %v", name, again, first)
		}
	}
}

// Copies of one keyed change sent at once (the gateway's hedge racing its
// first attempt) change the aggregate once and all answer that change.
func testConcurrentCopiesOfAKeyedUpdateApplyOnce(t *testing.T, open openStore) {
	r, _ := newRepo(t, open)
	create(t, r, "agent_1", "")
	var calls atomic.Int64
	answers := make(chan *agentsv1.Agent, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			got, err := r.Update(context.Background(), "ws", "agent_1", "cmd-1", rename("second", &calls))
			if err != nil {
				t.Error(err)
			}
			answers <- got
		})
	}
	wg.Wait()
	close(answers)
	cur, _, _ := r.Get(context.Background(), "ws", "agent_1")
	if len(cur.GetTags()) != 1 {
		t.Fatalf("tags %v: the change was applied %d times", cur.GetTags(), len(cur.GetTags()))
	}
	for got := range answers {
		if !proto.Equal(got, cur) {
			t.Fatalf("a copy answered %v, want %v", got, cur)
		}
	}
}

// A keyed deletion sent again answers as the first did (no 404), and a
// keyed change replayed after the aggregate was deleted answers its first
// result.
func testKeyedReplayOfADeletion(t *testing.T, open openStore) {
	r, _ := newRepo(t, open)
	create(t, r, "agent_1", "")
	var calls atomic.Int64
	first := update(t, r, "cmd-rename", rename("second", &calls))
	gone := update(t, r, "cmd-delete", deleteAgent)
	if again := update(t, r, "cmd-delete", deleteAgent); !proto.Equal(again, gone) {
		t.Fatalf("replayed deletion: %v", again)
	}
	if again := update(t, r, "cmd-rename", rename("other", &calls)); !proto.Equal(again, first) {
		t.Fatalf("replayed change of a deleted aggregate: %v, want %v", again, first)
	}
	if _, err := r.Update(context.Background(), "ws", "agent_1", "cmd-new", rename("x", &calls)); !errors.Is(err, errNotFound) {
		t.Fatalf("a new change of a deleted aggregate: %v", err)
	}
}

// Once the stream has forgotten a command id (its duplicate window), a
// replay is still recognised from the aggregate: its last event, or its
// history when the replay changes nothing or fails.
func testKeyedReplayBeyondTheDuplicateWindow(t *testing.T, open openStore) {
	const window = 200 * time.Millisecond
	r, _ := newRepoWindow(t, open, window)
	create(t, r, "agent_1", "")
	var calls atomic.Int64
	first := update(t, r, "cmd-1", rename("second", &calls))
	forgotten := probeWindow(t, r)
	seq := seqOf(t, r)
	forgotten()
	if again := update(t, r, "cmd-1", rename("other", &calls)); !proto.Equal(again, first) || seqOf(t, r) != seq {
		t.Fatalf("replay of the last change: %v, want %v", again, first)
	}
	update(t, r, "", rename("third", &calls))
	if again := update(t, r, "cmd-1", refuse); !proto.Equal(again, first) {
		t.Fatalf("replay of an older change that fails now: %v, want %v", again, first)
	}
}

// probeWindow appends a probe event under a command id on another subject
// of the stream; the function it returns waits (polling, 10 s at most)
// until the stream has forgotten that id, and with it every command id
// appended before.
func probeWindow(t *testing.T, r *Repo[*agentsv1.Agent]) func() {
	t.Helper()
	ctx := context.Background()
	subject, err := events.AgentSubject("ws", "probe")
	if err != nil {
		t.Fatal(err)
	}
	probe := func() bool {
		res, err := r.Store.Append(ctx, subject, eventlog.AnySeq, "probe", eventlog.Event{Type: "probe", Workspace: "ws"})
		if err != nil {
			t.Fatal(err)
		}
		return res.Duplicate
	}
	probe()
	return func() {
		for deadline := time.Now().Add(10 * time.Second); probe(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the stream still remembers the probe's command id after 10 s")
			}
		}
	}
}

// Each aggregate a command touches gets a command id of its own; none
// stays none.
func TestCommandFor(t *testing.T) {
	a, b := CommandFor("cmd-1", "tkt_a"), CommandFor("cmd-1", "tkt_b")
	if a == b || a == "cmd-1" || a != CommandFor("cmd-1", "tkt_a") || CommandFor("", "tkt_a") != "" {
		t.Fatalf("%q %q", a, b)
	}
}
