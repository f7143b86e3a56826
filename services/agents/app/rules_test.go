package app_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/cursor"
	"github.com/voiceai-platform/voiceai/pkg/eventlog/memlog"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/agents/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/agents/app"
)

// The agent rules, on the in-memory event log and read models: no NATS,
// no store.

type fixture struct {
	app    *app.App
	clock  time.Time
	caller principal.Principal
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	agents := memory.NewReadModel()
	f := &fixture{clock: time.Unix(1_800_000_000, 0),
		caller: principal.Principal{WorkspaceID: "ws_a", UserID: "user_1", Email: "qa@example.com", Permissions: []string{principal.PermissionAll}}}
	f.app = app.New(memlog.New(), agents, memory.NewSecrets(agents), testkit.Sealer(t), func(string) bool { return true },
		slog.New(slog.DiscardHandler), func() time.Time { return f.clock })
	f.app.Cursors = cursor.NewCodec([]byte("0123456789abcdef0123456789abcdef"))
	return f
}

// cmd is the fixture's caller sending a command with that id ("": none).
func (f *fixture) cmd(commandID string) principal.Caller {
	return principal.Caller{Principal: f.caller, CommandID: commandID}
}

// create makes an agent of in, as the fixture's caller with no command id.
func (f *fixture) create(t *testing.T, in app.CreateInput) *agentsv1.Agent {
	t.Helper()
	a, err := f.app.Create(t.Context(), f.cmd(""), in)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

var wantKind = testkit.WantKind

func ptr[T any](v T) *T { return &v }

func customLLM(secretID string) []byte {
	return []byte(`{"agent":{"prompt":{"prompt":"p","llm":"custom-llm","custom_llm":{"url":"http://127.0.0.1:9/v1","model_id":"ft","api_key":{"secret_id":"` + secretID + `"}}}}}`)
}

func TestAgentLifecycle(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.create(t, app.CreateInput{Name: ptr("  Refunds  "), SystemPrompt: ptr("Be precise."), Tags: []string{"prod"}})
	if a.Name != "Refunds" || a.SystemPrompt != "Be precise." || !strings.Contains(string(a.ConversationConfigJson), "Be precise.") ||
		a.CreatedByEmail != "qa@example.com" || a.CreatedAtUnix != f.clock.Unix() {
		t.Fatalf("created: %+v", a)
	}
	untitled, err := f.app.Create(ctx, f.cmd(""), app.CreateInput{})
	if err != nil || untitled.Name != app.DefaultName {
		t.Fatalf("an unnamed agent: %v %v", untitled.GetName(), err)
	}
	_, err = f.app.Create(ctx, f.cmd(""), app.CreateInput{SystemPrompt: ptr("one"), ConversationConfig: []byte(`{"agent":{"prompt":{"prompt":"another"}}}`)})
	wantKind(t, err, apperr.Invalid, "a system_prompt contradicting the configuration's")

	f.clock = f.clock.Add(time.Minute)
	upd, err := f.app.Update(ctx, f.cmd(""), a.AgentId, app.UpdateInput{ConversationConfig: []byte(`{"agent":{"first_message":"Hi"}}`)})
	if err != nil || !strings.Contains(string(upd.ConversationConfigJson), `"first_message":"Hi"`) || upd.SystemPrompt != "Be precise." || upd.UpdatedAtUnix != f.clock.Unix() {
		t.Fatalf("a merge patch keeps what it does not name: %s %v", upd.GetConversationConfigJson(), err)
	}
	_, err = f.app.Update(ctx, f.cmd(""), a.AgentId, app.UpdateInput{Name: ptr("Renamed"), SystemPrompt: ptr("q"), ConversationConfig: []byte(`{"agent":{"prompt":{"prompt":"r"}}}`)})
	wantKind(t, err, apperr.Invalid, "an update whose system_prompt contradicts its own patch's prompt")
	same, err := f.app.Update(ctx, f.cmd(""), a.AgentId, app.UpdateInput{SystemPrompt: ptr("q"), ConversationConfig: []byte(`{"agent":{"prompt":{"prompt":"q"}}}`)})
	if err != nil || same.SystemPrompt != "q" || same.Name != "Refunds" {
		t.Fatalf("the same prompt twice is one prompt, and the refused update changed nothing: %+v %v", same, err)
	}
	_, err = f.app.Update(ctx, principal.In("ws_b"), a.AgentId, app.UpdateInput{Name: ptr("x")})
	wantKind(t, err, apperr.NotFound, "another workspace's agent")

	if err := f.app.Delete(ctx, f.cmd("del-1"), a.AgentId); err != nil {
		t.Fatal(err)
	}
	if err := f.app.Delete(ctx, f.cmd("del-1"), a.AgentId); err != nil {
		t.Fatalf("a replayed delete answers as the first did: %v", err)
	}
	wantKind(t, f.app.Delete(ctx, f.cmd(""), a.AgentId), apperr.NotFound, "deleting a deleted agent anew")
	page, err := f.app.List(ctx, "ws_a", "user_1", app.ListParams{})
	if err != nil || len(page.Agents) != 1 || page.Agents[0].ID != untitled.AgentId {
		t.Fatalf("listing after a delete: %+v %v", page.Agents, err)
	}
}

func TestKeyedAgentWritesApplyOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	first, err := f.app.Create(ctx, f.cmd("create-1"), app.CreateInput{Name: ptr("A")})
	if err != nil {
		t.Fatal(err)
	}
	again, err := f.app.Create(ctx, f.cmd("create-1"), app.CreateInput{Name: ptr("B")})
	if err != nil || again.AgentId != first.AgentId || again.Name != "A" {
		t.Fatalf("a retried create: %+v %v", again, err)
	}
	if _, err := f.app.Update(ctx, f.cmd("patch-1"), first.AgentId, app.UpdateInput{Name: ptr("first body")}); err != nil {
		t.Fatal(err)
	}
	replay, err := f.app.Update(ctx, f.cmd("patch-1"), first.AgentId, app.UpdateInput{Name: ptr("second body")})
	if err != nil || replay.Name != "first body" {
		t.Fatalf("a replayed update applied its own body: %q %v", replay.GetName(), err)
	}
}

// An agent's own model endpoint names its key by a workspace secret,
// which must exist, and which cannot be deleted while an agent uses it.
func TestSecretsUsedByAgents(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s := f.secretOf(t, "llm key", "sk-1")
	if strings.Contains(string(s.SealedValue), "sk-1") {
		t.Fatal("the secret's value is stored sealed")
	}
	_, err := f.app.Create(ctx, f.cmd(""), app.CreateInput{ConversationConfig: customLLM("secret_unknown")})
	wantKind(t, err, apperr.Invalid, "an endpoint key naming no secret")
	other := f.caller
	other.WorkspaceID = "ws_b"
	_, err = f.app.Create(ctx, principal.Caller{Principal: other}, app.CreateInput{ConversationConfig: customLLM(s.SecretId)})
	wantKind(t, err, apperr.Invalid, "an endpoint key naming another workspace's secret")
	a := f.create(t, app.CreateInput{ConversationConfig: customLLM(s.SecretId)})
	got, err := f.app.GetSecret(ctx, "ws_a", s.SecretId, 0)
	if err != nil || len(got.UsedBy) != 1 || got.UsedBy[0].ID != a.AgentId {
		t.Fatalf("used by: %+v %v", got, err)
	}
	wantKind(t, f.app.DeleteSecret(ctx, f.cmd(""), s.SecretId), apperr.Conflict, "deleting a secret in use")
	if err := f.app.Delete(ctx, f.cmd(""), a.AgentId); err != nil {
		t.Fatal(err)
	}
	if err := f.app.DeleteSecret(ctx, f.cmd(""), s.SecretId); err != nil {
		t.Fatalf("deleting a secret no agent uses: %v", err)
	}
}

// A listed agent shows its latest call from the call log; one never
// called shows none, and another workspace's call of the same id is not
// its call.
func TestTheListingShowsEachAgentsLastCall(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	calls := memory.NewCallLog()
	f.app.Calls = calls
	called := f.create(t, app.CreateInput{Name: ptr("Called")})
	quiet := f.create(t, app.CreateInput{Name: ptr("Quiet")})
	if err := calls.Record(ctx, []app.Call{
		{WorkspaceID: "ws_a", AgentID: called.GetAgentId(), AtUnix: 1_800_000_300},
		{WorkspaceID: "ws_a", AgentID: called.GetAgentId(), AtUnix: 1_800_000_100},
		{WorkspaceID: "ws_b", AgentID: quiet.GetAgentId(), AtUnix: 1_800_000_200},
	}); err != nil {
		t.Fatal(err)
	}
	page, err := f.app.List(ctx, "ws_a", "user_1", app.ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	last := map[string]*int64{}
	for _, d := range page.Agents {
		last[d.ID] = d.LastCallUnix
	}
	if at := last[called.GetAgentId()]; len(page.Agents) != 2 || at == nil || *at != 1_800_000_300 {
		t.Fatalf("the called agent's last call: %v (of %d agents), want 1800000300", at, len(page.Agents))
	}
	if at := last[quiet.GetAgentId()]; at != nil {
		t.Fatalf("an agent never called in its workspace shows a last call: %d", *at)
	}
}
