package app_test

import (
	"context"
	"errors"
	"testing"

	events "github.com/voiceai-platform/voiceai/proto-events"
	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"
	identityv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/identity/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventlog/memlog"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/tickets/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// An agent created a moment ago, which the directory has not seen yet, is
// usable at once: the AGENTS stream is asked on a miss. A deleted agent,
// and another workspace's, stay unknown.
func TestAnAgentIsUsableAsSoonAsItExists(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	agents := memlog.New()
	put := func(ev events.Event, ws, id string) {
		t.Helper()
		subject, _ := events.AgentSubject(ws, id)
		if _, err := esproto.Append(ctx, agents, subject, 0, esproto.Meta(ctx, ws, "", f.clock), ev); err != nil {
			t.Fatal(err)
		}
	}
	put(&agentsv1.AgentCreated{Agent: &agentsv1.Agent{AgentId: "agent_new", WorkspaceId: "ws_a"}}, "ws_a", "agent_new")
	gone := int64(1)
	put(&agentsv1.AgentDeleted{Agent: &agentsv1.Agent{AgentId: "agent_gone", WorkspaceId: "ws_a", DeletedAtUnix: &gone}}, "ws_a", "agent_gone")
	put(&agentsv1.AgentCreated{Agent: &agentsv1.Agent{AgentId: "agent_b", WorkspaceId: "ws_b"}}, "ws_b", "agent_b")

	raise := func(agent string) error {
		_, err := f.app.CreateManual(ctx, principal.Caller{Principal: f.qa}, agent, app.ManualInput{Title: ptr("Wrong price")})
		return err
	}
	if err := raise("agent_new"); !errors.Is(err, apperr.AgentNotFound) {
		t.Fatalf("without the stream to ask, an agent the directory lacks: %v, want agent_not_found", err)
	}
	f.app.Agents = agents
	if err := raise("agent_new"); err != nil {
		t.Fatalf("an agent only the stream has: %v", err)
	}
	if _, err := f.app.AssignableUsers(ctx, "ws_a", "agent_new"); err != nil {
		t.Fatalf("assignable users of it: %v", err)
	}
	for _, agent := range []string{"agent_gone", "agent_b", "agent_never"} {
		if err := raise(agent); !errors.Is(err, apperr.AgentNotFound) {
			t.Fatalf("%s: %v, want agent_not_found", agent, err)
		}
	}

	// The ticket is listed before the directory has seen its agent, and
	// leaves the listings once the directory has seen the agent deleted.
	listed := func() int {
		t.Helper()
		page, err := f.app.List(ctx, "ws_a", app.ListParams{AgentID: "agent_new"})
		if err != nil {
			t.Fatal(err)
		}
		return len(page.Tickets)
	}
	if n := listed(); n != 1 {
		t.Fatalf("tickets of an agent the directory has not seen yet: %d listed, want 1", n)
	}
	f.app.Directory.(*memory.Directory).DeleteAgent("agent_new")
	if n := listed(); n != 0 {
		t.Fatalf("tickets of a deleted agent: %d listed, want 0", n)
	}
}

// A member added a moment ago, a person or a service account, which the
// directory has not seen yet, can be assigned at once: the IDENTITY
// stream is asked on a miss. A stranger, or another workspace's member,
// still cannot.
func TestAMemberIsAssignableAsSoonAsAdded(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	identity := memlog.New()
	put := func(ev events.Event, subjectOf func(string, string) (string, error), ws, id string) {
		t.Helper()
		subject, _ := subjectOf(ws, id)
		if _, err := esproto.Append(ctx, identity, subject, 0, esproto.Meta(ctx, ws, "", f.clock), ev); err != nil {
			t.Fatal(err)
		}
	}
	put(&identityv1.UserAdded{User: &identityv1.User{UserId: "user_new", WorkspaceId: "ws_a"}}, events.UserSubject, "ws_a", "user_new")
	put(&identityv1.ServiceAccountCreated{Account: &identityv1.ServiceAccount{UserId: "sa_new", WorkspaceId: "ws_a"}}, events.ServiceAccountSubject, "ws_a", "sa_new")
	put(&identityv1.UserAdded{User: &identityv1.User{UserId: "user_b", WorkspaceId: "ws_b"}}, events.UserSubject, "ws_b", "user_b")
	tk, err := f.app.CreateManual(ctx, principal.Caller{Principal: f.qa}, "agent_1", app.ManualInput{Title: ptr("Wrong price")})
	if err != nil {
		t.Fatal(err)
	}
	assign := func(user string) error {
		_, err := f.app.Update(ctx, principal.Caller{Principal: f.qa}, tk.TicketId, app.PatchInput{AssigneeUserID: app.Nullable{Set: true, Value: ptr(user)}})
		return err
	}
	wantKind(t, assign("user_new"), apperr.Invalid, "without the stream to ask, a member the directory lacks")
	f.app.Identity = identity
	for _, user := range []string{"user_new", "sa_new"} {
		if err := assign(user); err != nil {
			t.Fatalf("%s, only the stream has: %v", user, err)
		}
	}
	for _, user := range []string{"user_b", "user_never"} {
		wantKind(t, assign(user), apperr.Invalid, user)
	}
}
