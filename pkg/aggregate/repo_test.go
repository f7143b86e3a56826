package aggregate

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
)

var errNotFound, errConflict = errors.New("not found"), errors.New("conflict")

func newRepo(t *testing.T) (*Repo[*agentsv1.Agent], *sync.Map) {
	t.Helper()
	js, err := jetstream.New((&testenv.Env{NATSURL: testenv.StartNATS(t)}).Conn(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eventstore.EnsureStream(context.Background(), js, eventstore.StreamConfig{Name: events.AgentsStream, Subjects: []string{events.AgentsAll}}); err != nil {
		t.Fatal(err)
	}
	projected := &sync.Map{}
	return &Repo[*agentsv1.Agent]{
		Store:   eventstore.New(js, events.AgentsStream),
		Subject: events.AgentSubject,
		StateOf: func(m proto.Message) (*agentsv1.Agent, bool) {
			switch ev := m.(type) {
			case *agentsv1.AgentCreated:
				return ev.GetAgent(), true
			case *agentsv1.AgentUpdated:
				return ev.GetAgent(), true
			case *agentsv1.AgentDeleted:
				return ev.GetAgent(), true
			}
			return nil, false
		},
		Gone:  func(a *agentsv1.Agent) bool { return a.DeletedAtUnix != nil },
		Touch: func(a *agentsv1.Agent, now time.Time) { a.UpdatedAtUnix = now.Unix() },
		Project: func(_ context.Context, seq uint64, a *agentsv1.Agent) error {
			projected.Store(a.GetAgentId(), seq)
			return nil
		},
		NotFound: errNotFound, Conflict: errConflict,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}, projected
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

func TestCreateGetUpdateDelete(t *testing.T) {
	r, projected := newRepo(t)
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
	if _, err := r.Update(ctx, "ws", "agent_1", "", func(next *agentsv1.Agent, meta *commonv1.EventMeta) (proto.Message, error) {
		now := int64(1)
		next.DeletedAtUnix = &now
		return &agentsv1.AgentDeleted{Meta: meta, Agent: next}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Get(ctx, "ws", "agent_1"); !errors.Is(err, errNotFound) {
		t.Fatalf("a deleted aggregate reads as missing: %v", err)
	}
}

func TestRetriedCreateAnswersTheFirst(t *testing.T) {
	r, projected := newRepo(t)
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

func TestConcurrentUpdatesRetryAgainstFreshState(t *testing.T) {
	r, _ := newRepo(t)
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
