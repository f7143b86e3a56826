package app_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/cursor"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/eventlog/eventlogtest"
	"github.com/voiceai-platform/voiceai/pkg/eventlog/memlog"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/agents/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/agents/app"
)

// blindSecrets is a secrets read model that has not yet seen any agent
// use a secret, as one lagging behind the event log.
type blindSecrets struct{ *memory.Secrets }

func (blindSecrets) AgentsUsing(context.Context, string, string, int) ([]app.AgentDoc, error) {
	return nil, nil
}

// newFixtureOver is newFixture whose application writes through store
// and reads the secrets' users from rm (nil: the memory read model).
func newFixtureOver(t *testing.T, store func(eventlog.Store) eventlog.Store, blind bool) *fixture {
	t.Helper()
	f := newFixture(t)
	agents := memory.NewReadModel()
	var secrets app.SecretReadModel = memory.NewSecrets(agents)
	if blind {
		secrets = blindSecrets{memory.NewSecrets(agents)}
	}
	f.app = app.New(store(memlog.New()), agents, secrets, testkit.Sealer(t), func(string) bool { return true },
		slog.New(slog.DiscardHandler), func() time.Time { return f.clock })
	f.app.Cursors = cursor.NewCodec([]byte("0123456789abcdef0123456789abcdef"))
	return f
}

// bound is secretID's list of the agents bound to it, as its event log
// holds it.
func (f *fixture) bound(t *testing.T, secretID string) []string {
	t.Helper()
	s, _, err := f.app.Secrets.Get(t.Context(), "ws_a", secretID)
	if err != nil {
		t.Fatal(err)
	}
	return s.BoundAgentIds
}

// A secret's deletion and an agent starting to use it, both decided
// before either is stored, never both land: either the agent is bound
// and the deletion refused 409 naming it, or the secret is gone and the
// agent's write refused 422 at its configuration. Without the secret's
// own list, each decided on a secret no agent used, and an agent was
// left calling its model with a secret that no longer exists.
func TestASecretIsNeverDeletedUnderAnAgentStartingToUseIt(t *testing.T) {
	for _, write := range []string{"create", "update"} {
		var held *eventlogtest.Held
		f := newFixtureOver(t, func(s eventlog.Store) eventlog.Store { held = &eventlogtest.Held{Store: s}; return held }, false)
		ctx := t.Context()
		s := f.secret(t, "llm key")
		var agentID string
		if write == "update" {
			agentID = f.create(t, app.CreateInput{Name: ptr("plain")}).AgentId
		}

		held.Arm(2)
		var writeErr, deleteErr error
		var wg sync.WaitGroup
		wg.Go(func() {
			if write == "create" {
				var created interface{ GetAgentId() string }
				created, writeErr = f.app.Create(ctx, f.cmd(""), app.CreateInput{ConversationConfig: customLLM(s.SecretId)})
				if writeErr == nil {
					agentID = created.GetAgentId()
				}
				return
			}
			_, writeErr = f.app.Update(ctx, f.cmd(""), agentID, app.UpdateInput{ConversationConfig: customLLM(s.SecretId)})
		})
		wg.Go(func() { deleteErr = f.app.DeleteSecret(ctx, f.cmd(""), s.SecretId) })
		wg.Wait()

		if (writeErr == nil) == (deleteErr == nil) {
			t.Fatalf("%s: the agent's write answered %v and the deletion %v; want exactly one to land", write, writeErr, deleteErr)
		}
		if deleteErr != nil {
			wantKind(t, deleteErr, apperr.Conflict, write+": the deletion of a secret the agent now uses")
			if got := f.bound(t, s.SecretId); !slices.Equal(got, []string{agentID}) {
				t.Fatalf("%s: the secret lists %v, want the agent %s", write, got, agentID)
			}
			continue
		}
		// At conversation_config, or at the reference itself where the
		// retry's check of the configuration found the secret gone.
		wantKind(t, writeErr, apperr.Invalid, write+": an agent using a secret deleted meanwhile")
		if ve, ok := writeErr.(apperr.ValidationErrors); !ok || len(ve) == 0 || fmt.Sprint(ve[0].Loc[:2]...) != fmt.Sprint("body", "conversation_config") {
			t.Fatalf("%s: refused at %v, want under body.conversation_config", write, writeErr)
		}
		if _, _, err := f.app.Secrets.Get(ctx, "ws_a", s.SecretId); err == nil {
			t.Fatalf("%s: the deletion answered success and the secret is still there", write)
		}
		if write == "update" {
			a, _, err := f.app.Agents.Get(ctx, "ws_a", agentID)
			if err != nil || string(a.ConversationConfigJson) == string(customLLM(s.SecretId)) {
				t.Fatalf("%s: the refused update was stored: %s %v", write, a.GetConversationConfigJson(), err)
			}
		}
	}
}

// A secret's list of its agents follows their configurations: an agent
// created with it joins, one moved to another secret leaves it for that
// one, a deleted agent leaves; a keyed create sent again joins once. The
// list, not the read model, refuses the deletion of a secret in use: a
// read model that has not yet seen the agent does not let it through.
func TestASecretKeepsTheListOfTheAgentsBoundToIt(t *testing.T) {
	f := newFixtureOver(t, func(s eventlog.Store) eventlog.Store { return s }, true)
	ctx := t.Context()
	s1, s2 := f.secret(t, "first"), f.secret(t, "second")

	a, err := f.app.Create(ctx, f.cmd("c-1"), app.CreateInput{ConversationConfig: customLLM(s1.SecretId)})
	if err != nil {
		t.Fatal(err)
	}
	again, err := f.app.Create(ctx, f.cmd("c-1"), app.CreateInput{ConversationConfig: customLLM(s1.SecretId)})
	if err != nil || again.AgentId != a.AgentId {
		t.Fatalf("the keyed create sent again: %v %v", again.GetAgentId(), err)
	}
	b := f.create(t, app.CreateInput{ConversationConfig: endpoint("https://llm.example.com/v1", nil, map[string]any{"X-Key": secretRef(s1.SecretId)})})
	want := []string{a.AgentId, b.AgentId}
	slices.Sort(want)
	if got := f.bound(t, s1.SecretId); !slices.Equal(got, want) {
		t.Fatalf("after two creates the secret lists %v, want %v", got, want)
	}
	wantKind(t, f.app.DeleteSecret(ctx, f.cmd(""), s1.SecretId), apperr.Conflict, "deleting a bound secret the read model shows unused")

	if _, err := f.app.Update(ctx, f.cmd("u-1"), a.AgentId, app.UpdateInput{ConversationConfig: customLLM(s2.SecretId)}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.app.Update(ctx, f.cmd("u-1"), a.AgentId, app.UpdateInput{ConversationConfig: customLLM(s2.SecretId)}); err != nil {
		t.Fatalf("the keyed update sent again: %v", err)
	}
	if got, got2 := f.bound(t, s1.SecretId), f.bound(t, s2.SecretId); !slices.Equal(got, []string{b.AgentId}) || !slices.Equal(got2, []string{a.AgentId}) {
		t.Fatalf("after the move the secrets list %v and %v", got, got2)
	}
	if _, err := f.app.Update(ctx, f.cmd(""), a.AgentId, app.UpdateInput{Name: ptr("renamed")}); err != nil {
		t.Fatal(err)
	}
	if got := f.bound(t, s2.SecretId); !slices.Equal(got, []string{a.AgentId}) {
		t.Fatalf("a rename changed the binding: %v", got)
	}

	for _, id := range []string{a.AgentId, b.AgentId} {
		if err := f.app.Delete(ctx, f.cmd(""), id); err != nil {
			t.Fatal(err)
		}
	}
	if got, got2 := f.bound(t, s1.SecretId), f.bound(t, s2.SecretId); len(got) != 0 || len(got2) != 0 {
		t.Fatalf("after the agents' deletion the secrets list %v and %v", got, got2)
	}
	for _, s := range []string{s1.SecretId, s2.SecretId} {
		if err := f.app.DeleteSecret(ctx, f.cmd(""), s); err != nil {
			t.Fatalf("deleting a secret no agent uses any more: %v", err)
		}
	}
}
