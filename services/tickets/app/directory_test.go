package app_test

import (
	"context"
	"errors"
	"slices"
	"strings"
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
	assign := f.assigner(t)
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

// assigner opens a ticket and answers what assigning it to a user does.
func (f *fixture) assigner(t *testing.T) func(user string) error {
	t.Helper()
	ctx := context.Background()
	tk, err := f.app.CreateManual(ctx, principal.Caller{Principal: f.qa}, "agent_1", app.ManualInput{Title: ptr("Wrong price")})
	if err != nil {
		t.Fatal(err)
	}
	return func(user string) error {
		_, err := f.app.Update(ctx, principal.Caller{Principal: f.qa}, tk.TicketId, app.PatchInput{AssigneeUserID: app.Nullable{Set: true, Value: ptr(user)}})
		return err
	}
}

// A member whose account is locked is listed as assignable without access,
// and no ticket is assigned to it; unlocked, it is assignable again. The
// IDENTITY stream decides, not the directory, which follows it a moment
// behind: a member locked (or unlocked) just before the assignment is
// judged as it is now.
func TestALockedMemberIsNotAssigned(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	identity := memlog.New()
	f.app.Identity = identity
	state := func(id string, locked bool) {
		t.Helper()
		subject, _ := events.UserSubject("ws_a", id)
		rec, found, err := identity.Last(ctx, subject)
		if err != nil {
			t.Fatal(err)
		}
		var expected uint64
		if found {
			expected = rec.Seq
		}
		u := &identityv1.User{UserId: id, WorkspaceId: "ws_a", Locked: locked}
		if _, err := esproto.Append(ctx, identity, subject, expected, esproto.Meta(ctx, "ws_a", "", f.clock), &identityv1.UserAdded{User: u}); err != nil {
			t.Fatal(err)
		}
	}
	// user_locked: locked a moment ago, the directory not told yet.
	f.dir.PutMember("ws_a", app.Member{UserID: "user_locked"})
	state("user_locked", true)
	// user_far: only the stream knows it.
	state("user_far", true)
	assign := f.assigner(t)
	for _, user := range []string{"user_locked", "user_far"} {
		err := assign(user)
		wantKind(t, err, apperr.Invalid, user)
		if !strings.Contains(err.Error(), "locked") {
			t.Fatalf("%s: %v, want it to say the account is locked", user, err)
		}
	}
	f.dir.PutMember("ws_a", app.Member{UserID: "user_locked", Locked: true})
	users, err := f.app.AssignableUsers(ctx, "ws_a", "agent_1")
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(users, func(m app.Member) bool { return m.UserID == "user_locked" }); i < 0 || !users[i].Locked {
		t.Fatalf("assignable users: %+v, want user_locked listed as locked", users)
	}
	// Unlocked a moment ago, the directory still saying locked.
	state("user_locked", false)
	if err := assign("user_locked"); err != nil {
		t.Fatalf("unlocked: %v", err)
	}
}

// lateDirectory learns its conversations only when asked to await them,
// as the service's directory learns one ingested a moment ago from
// PLATFORM.
type lateDirectory struct {
	*memory.Directory
	pending map[[2]string]app.Conversation
	awaited int
}

func (d *lateDirectory) AwaitConversations(_ context.Context, workspaceID string) error {
	d.awaited++
	for k, c := range d.pending {
		if k[0] == workspaceID {
			d.PutConversation(k[0], k[1], c)
			delete(d.pending, k)
		}
	}
	return nil
}

// A conversation ingested a moment ago (answered 202), which the directory
// has not learnt yet, takes a ticket at once: on a miss the directory
// awaits the workspace's conversation events stored so far. One of another
// workspace stays unknown. A known one costs no wait, nor does a ticket
// that names its agent (raised on an unknown conversation anyway, as the
// QA worker's are).
func TestATicketOnAConversationIngestedAMomentAgo(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	dir := &lateDirectory{Directory: f.app.Directory.(*memory.Directory), pending: map[[2]string]app.Conversation{
		{"ws_a", "conv_new"}: {AgentID: "agent_2", StartedAt: 1_800_000_000},
		{"ws_b", "conv_b"}:   {AgentID: "agent_9", StartedAt: 1_800_000_000},
	}}
	f.app.Directory = dir
	tk, existing, err := f.app.Create(ctx, as(f.qa, ""), app.CreateInput{ConversationID: ptr("conv_new"), QAComment: ptr("Wrong hours.")})
	if err != nil || existing || tk.GetAgentId() != "agent_2" || tk.GetFirstSeenUnixSecs() != 1_800_000_000 {
		t.Fatalf("a ticket on a conversation learnt on awaiting: %v %v %v", tk, existing, err)
	}
	_, _, err = f.app.Create(ctx, as(f.qa, ""), app.CreateInput{ConversationID: ptr("conv_b"), QAComment: ptr("Not mine.")})
	if !errors.Is(err, apperr.ConversationNotFound) {
		t.Fatalf("a ticket on another workspace's conversation: %v, want conversation_not_found", err)
	}
	awaited := dir.awaited
	if _, _, err := f.app.Create(ctx, as(f.qa, ""), app.CreateInput{ConversationID: ptr("conv_1"), QAComment: ptr("Known.")}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.app.Create(ctx, as(f.qa, ""), app.CreateInput{ConversationID: ptr("conv_unseen"), AgentID: ptr("agent_1"), QAComment: ptr("Anyway.")}); err != nil {
		t.Fatal(err)
	}
	if dir.awaited != awaited {
		t.Fatal("a create on a known conversation, or naming its agent, awaited the directory")
	}
}
