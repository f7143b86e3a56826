package adapters

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"
	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"
	identityv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/identity/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/pkg/wire"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/app/directorytest"
)

// The directory learns from the AGENTS, IDENTITY and PLATFORM streams,
// what they held when it started and what comes later.
func TestDirectoryConforms(t *testing.T) {
	directorytest.Run(t, func(t *testing.T) (app.Directory, func(...directorytest.Fact)) {
		s := newStreamSources(t)
		return s.following(NewDirectory(slog.New(slog.DiscardHandler))), s.tell
	})
}

// newStreamSources makes the streams the directory follows, empty.
func newStreamSources(t *testing.T) *streamSources {
	js := testenv.StreamsAt(t, func(ctx context.Context, js jetstream.JetStream, replicas int) error {
		return eventstore.EnsureEventStreams(ctx, js, replicas, events.AgentsStream, events.IdentityStream, events.PlatformStream)
	})
	return &streamSources{t: t, js: js, last: map[string]uint64{}}
}

// following is dir following the sources until the test ends.
func (s *streamSources) following(dir *Directory) *Directory {
	s.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s.t.Cleanup(cancel)
	if err := dir.Follow(ctx, s.js); err != nil {
		s.t.Fatal(err)
	}
	return dir
}

// streamSources tells facts as the other services do: events on their
// streams.
type streamSources struct {
	t    *testing.T
	js   jetstream.JetStream
	last map[string]uint64 // each subject's last sequence
}

func (s *streamSources) tell(facts ...directorytest.Fact) {
	s.t.Helper()
	for _, f := range facts {
		switch {
		case f.Agent != nil:
			a := &agentsv1.Agent{AgentId: f.Agent.AgentID, WorkspaceId: f.Agent.WorkspaceID, Name: "Support"}
			var ev events.Event = &agentsv1.AgentCreated{Agent: a}
			if f.Agent.Deleted {
				at := time.Now().Unix()
				a.DeletedAtUnix = &at
				ev = &agentsv1.AgentDeleted{Agent: a}
			}
			s.append(events.AgentsStream, events.AgentSubject, f.Agent.WorkspaceID, f.Agent.AgentID, ev)
		case f.Member != nil && f.Member.IsServiceAccount:
			m := f.Member
			s.append(events.IdentityStream, events.ServiceAccountSubject, m.WorkspaceID, m.UserID, &identityv1.ServiceAccountCreated{
				Account: &identityv1.ServiceAccount{UserId: m.UserID, WorkspaceId: m.WorkspaceID, Name: m.Name, Email: m.Email}})
		case f.Member != nil:
			m := f.Member
			s.append(events.IdentityStream, events.UserSubject, m.WorkspaceID, m.UserID, &identityv1.UserAdded{
				User: &identityv1.User{UserId: m.UserID, WorkspaceId: m.WorkspaceID, FirstName: m.Name, Email: m.Email}})
		case f.Conversation != nil:
			c := f.Conversation
			data := map[string]any{"conversation_id": c.ConversationID, "agent_id": c.AgentID}
			s.platform(c.WorkspaceID, "conversation_started", time.Unix(c.StartedAt, 0), data)
			if c.EndedAt != 0 {
				s.platform(c.WorkspaceID, "conversation_ended", time.Unix(c.EndedAt, 0), data)
			}
		}
	}
}

func (s *streamSources) append(stream string, subjectOf func(string, string) (string, error), ws, id string, ev events.Event) {
	s.t.Helper()
	ctx := context.Background()
	subject, err := subjectOf(ws, id)
	if err != nil {
		s.t.Fatal(err)
	}
	meta := esproto.Meta(ctx, ws, "", time.Now())
	done, err := esproto.Append(ctx, eventstore.New(s.js, stream), subject, s.last[subject], meta, ev)
	if err != nil {
		s.t.Fatal(err)
	}
	s.last[subject] = done.Seq
}

func (s *streamSources) platform(ws, event string, at time.Time, data map[string]any) {
	s.t.Helper()
	subject, err := events.PlatformSubject(ws, event)
	if err != nil {
		s.t.Fatal(err)
	}
	raw, _ := json.Marshal(data)
	body, _ := json.Marshal(wire.Envelope{Event: event, Timestamp: wire.FormatTimestamp(at), Data: raw})
	if _, err := s.js.Publish(context.Background(), subject, body); err != nil {
		s.t.Fatal(err)
	}
}

// A directory started from a snapshot of its conversations holds what the
// snapshot holds: awaiting a workspace whose conversation events all lie
// before the snapshot returns at once, though no record is applied after
// the start.
func TestAwaitingConversationsAfterAStartFromASnapshot(t *testing.T) {
	ctx := context.Background()
	s := newStreamSources(t)
	first := s.following(NewDirectory(slog.New(slog.DiscardHandler)))
	s.platform("ws_a", "conversation_started", time.Unix(1_800_000_000, 0), map[string]any{"conversation_id": "conv_1", "agent_id": "agent_1"})
	if err := first.AwaitConversations(ctx, "ws_a"); err != nil {
		t.Fatal(err)
	}
	var snapshot bytes.Buffer
	if _, err := first.Conversations.WriteSnapshot(&snapshot); err != nil {
		t.Fatal(err)
	}

	restarted := NewDirectory(slog.New(slog.DiscardHandler))
	if _, err := restarted.Conversations.ReadSnapshot(&snapshot); err != nil {
		t.Fatal(err)
	}
	s.following(restarted)
	wait, stop := context.WithTimeout(ctx, 5*time.Second)
	defer stop()
	if err := restarted.AwaitConversations(wait, "ws_a"); err != nil {
		t.Fatalf("awaiting what the snapshot holds: %v", err)
	}
	if _, ok := restarted.Conversation("ws_a", "conv_1"); !ok {
		t.Fatal("the snapshot's conversation is not found")
	}
}

// An AGENTS stream made anew (a restore from an older backup) is what the
// directory knows of agents: an agent deleted in the old stream but live
// in the restored one is live (its tickets listed again), and one the
// restored stream lacks is not (found by a read-only audit).
func TestTheDirectoryFollowsAnAgentsStreamMadeAnew(t *testing.T) {
	s := newStreamSources(t)
	dir := s.following(NewDirectory(slog.New(slog.DiscardHandler)))
	agent := func(id string, deleted bool) directorytest.Fact {
		return directorytest.Fact{Agent: &directorytest.Agent{WorkspaceID: "ws_1", AgentID: id, Deleted: deleted}}
	}
	s.tell(agent("agent_restored", false), agent("agent_restored", true), agent("agent_lost", false))
	testkit.Eventually(t, 10*time.Second, "the old stream's agents learnt", func() bool {
		return dir.AgentDeleted("agent_restored") && dir.AgentExists("ws_1", "agent_lost")
	})
	testenv.RemakeStream(t, s.js, events.AgentsStream, func(ctx context.Context) error {
		return eventstore.EnsureEventStreams(ctx, s.js, 1, events.AgentsStream)
	})
	s.last = map[string]uint64{}
	s.tell(agent("agent_restored", false), agent("agent_new", false))
	testkit.Eventually(t, 60*time.Second, "the new stream's agent learnt", func() bool { return dir.AgentExists("ws_1", "agent_new") })
	if !dir.AgentExists("ws_1", "agent_restored") || dir.AgentDeleted("agent_restored") {
		t.Error("an agent live in the restored stream is still taken for deleted")
	}
	if dir.AgentExists("ws_1", "agent_lost") {
		t.Error("an agent the restored stream lacks still exists")
	}
}
