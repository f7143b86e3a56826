// Package directorytest is the conformance suite of app.Directory: every
// implementation (in memory, fed by the AGENTS, IDENTITY and PLATFORM
// streams) answers what it was told of agents, members and
// conversations, each workspace apart, and keeps up with what it is told
// later.
package directorytest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// Fact is one thing another service tells: exactly one of its fields is
// set.
type Fact struct {
	Agent        *Agent
	Member       *Member
	Conversation *Conversation
}

// Agent is an agent's state: live, or deleted.
type Agent struct {
	WorkspaceID, AgentID string
	Deleted              bool
}

// Member is a person or a service account added to a workspace.
type Member struct {
	WorkspaceID string
	app.Member
}

// Conversation is a conversation that started (at StartedAt) and, when
// EndedAt is set, ended. Times are whole seconds.
type Conversation struct {
	WorkspaceID, ConversationID string
	app.Conversation
}

// Opener opens a directory over fresh sources, and tell, which gives
// those sources facts, in order; the directory learns them at once or a
// moment later.
type Opener func(t *testing.T) (dir app.Directory, tell func(...Fact))

const t0 = 1_800_000_000

func agent(ws, id string) Fact { return Fact{Agent: &Agent{WorkspaceID: ws, AgentID: id}} }
func agentGone(ws, id string) Fact {
	return Fact{Agent: &Agent{WorkspaceID: ws, AgentID: id, Deleted: true}}
}
func member(ws, id, name string, service bool) Fact {
	return Fact{Member: &Member{ws, app.Member{UserID: id, Name: name, Email: id + "@example.com", IsServiceAccount: service}}}
}
func conversation(ws, id, agent string, started, ended int64) Fact {
	return Fact{Conversation: &Conversation{ws, id, app.Conversation{AgentID: agent, StartedAt: started, EndedAt: ended}}}
}

func userIDs(ms []app.Member) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, m.UserID)
	}
	return out
}

// eventually waits for what the directory learns a moment later.
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, what, ok)
}

// Run checks open against what app.Directory promises.
func Run(t *testing.T, open Opener) {
	t.Run("agents: live ones exist in their workspace; deleted ones are said so", func(t *testing.T) {
		dir, tell := open(t)
		if dir.AgentExists("ws_a", "agent_1") || dir.AgentDeleted("agent_1") {
			t.Fatal("a directory told nothing knows an agent")
		}
		tell(agent("ws_a", "agent_1"), agent("ws_a", "agent_2"), agent("ws_b", "agent_9"), agentGone("ws_a", "agent_2"))
		eventually(t, "the agents are learnt", func() bool {
			return dir.AgentExists("ws_a", "agent_1") && dir.AgentExists("ws_b", "agent_9") && dir.AgentDeleted("agent_2")
		})
		switch {
		case dir.AgentExists("ws_b", "agent_1"), dir.AgentExists("ws_a", "agent_9"):
			t.Fatal("an agent exists in another workspace")
		case dir.AgentExists("ws_a", "agent_2"):
			t.Fatal("a deleted agent exists")
		case dir.AgentDeleted("agent_1"), dir.AgentDeleted("agent_never"):
			t.Fatal("a live or unknown agent is said deleted")
		}
		tell(agentGone("ws_a", "agent_1"))
		eventually(t, "a deletion told later", func() bool { return !dir.AgentExists("ws_a", "agent_1") && dir.AgentDeleted("agent_1") })
	})

	t.Run("members: people and service accounts of each workspace, by user id", func(t *testing.T) {
		dir, tell := open(t)
		if got := dir.Members("ws_a"); got == nil || len(got) != 0 {
			t.Fatalf("members of a workspace nobody joined: %#v, want empty, not nil", got)
		}
		tell(member("ws_a", "user_c", "Cleo", false), member("ws_a", "sa_bot", "Triage bot", true), member("ws_a", "user_a", "Ada", false),
			member("ws_b", "user_b", "Bo", false))
		eventually(t, "the members are learnt", func() bool { return len(dir.Members("ws_a")) == 3 && len(dir.Members("ws_b")) == 1 })
		if got, want := userIDs(dir.Members("ws_a")), []string{"sa_bot", "user_a", "user_c"}; !slices.Equal(got, want) {
			t.Fatalf("members %v, want %v", got, want)
		}
		if m, ok := dir.Member("ws_a", "sa_bot"); !ok || m != (app.Member{UserID: "sa_bot", Name: "Triage bot", Email: "sa_bot@example.com", IsServiceAccount: true}) {
			t.Fatalf("the service account: %+v %v", m, ok)
		}
		if m, ok := dir.Member("ws_a", "user_a"); !ok || m.Name != "Ada" || m.Email != "user_a@example.com" || m.IsServiceAccount {
			t.Fatalf("a person: %+v %v", m, ok)
		}
		if _, ok := dir.Member("ws_a", "user_b"); ok {
			t.Fatal("another workspace's member is a member")
		}
		if _, ok := dir.Member("ws_a", "user_never"); ok {
			t.Fatal("a stranger is a member")
		}
		if got, want := userIDs(dir.Members("ws_b")), []string{"user_b"}; !slices.Equal(got, want) {
			t.Fatalf("ws_b's members %v, want %v", got, want)
		}
	})

	t.Run("conversations: their agent and times, in their workspace", func(t *testing.T) {
		dir, tell := open(t)
		tell(conversation("ws_a", "conv_1", "agent_1", t0, t0+60), conversation("ws_a", "conv_2", "agent_2", t0+100, 0),
			conversation("ws_b", "conv_9", "agent_9", t0, t0+5))
		eventually(t, "the conversations are learnt", func() bool {
			_, ok1 := dir.Conversation("ws_a", "conv_1")
			_, ok2 := dir.Conversation("ws_a", "conv_2")
			_, ok9 := dir.Conversation("ws_b", "conv_9")
			return ok1 && ok2 && ok9
		})
		if c, _ := dir.Conversation("ws_a", "conv_1"); c != (app.Conversation{AgentID: "agent_1", StartedAt: t0, EndedAt: t0 + 60}) {
			t.Fatalf("an ended conversation: %+v", c)
		}
		if c, _ := dir.Conversation("ws_a", "conv_2"); c != (app.Conversation{AgentID: "agent_2", StartedAt: t0 + 100}) {
			t.Fatalf("a conversation still going: %+v", c)
		}
		if c, ok := dir.Conversation("ws_b", "conv_1"); ok {
			t.Fatalf("another workspace's conversation: %+v", c)
		}
		if c, ok := dir.Conversation("ws_a", "conv_never"); ok {
			t.Fatalf("an unknown conversation: %+v", c)
		}
	})

	t.Run("conversations: what was stored before AwaitConversations is found after it", func(t *testing.T) {
		dir, tell := open(t)
		ctx := context.Background()
		if err := dir.AwaitConversations(ctx, "ws_a"); err != nil {
			t.Fatalf("awaiting a workspace told nothing: %v", err)
		}
		tell(conversation("ws_a", "conv_1", "agent_1", t0, 0))
		if err := dir.AwaitConversations(ctx, "ws_a"); err != nil {
			t.Fatal(err)
		}
		if c, ok := dir.Conversation("ws_a", "conv_1"); !ok || c.AgentID != "agent_1" {
			t.Fatalf("a conversation told before awaiting, after it: %+v %v", c, ok)
		}
	})
}
