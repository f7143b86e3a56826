package app_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"

	"github.com/voiceai-platform/voiceai/pkg/agentconfig"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/agents/app"
)

// secret makes a secret named name, valued "v-"+name, as the fixture's
// caller.
func (f *fixture) secret(t *testing.T, name string) *agentsv1.WorkspaceSecret {
	t.Helper()
	return f.secretOf(t, name, "v-"+name)
}

// secretOf creates a secret named name holding value, as the fixture's
// caller with no command id.
func (f *fixture) secretOf(t *testing.T, name, value string) *agentsv1.WorkspaceSecret {
	t.Helper()
	s, err := f.app.CreateSecret(t.Context(), f.cmd(""), app.SecretInput{Name: ptr(name), Value: ptr(value)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// in is the fixture's caller in another workspace.
func (f *fixture) in(workspaceID string) principal.Caller {
	p := f.caller
	p.WorkspaceID = workspaceID
	return principal.Caller{Principal: p}
}

// wantAt fails unless err is a validation error with a problem at loc.
func wantAt(t *testing.T, err error, what string, loc ...any) {
	t.Helper()
	ve, ok := err.(apperr.ValidationErrors)
	if ok && slices.ContainsFunc(ve, func(e apperr.FieldError) bool { return fmt.Sprint(e.Loc...) == fmt.Sprint(loc...) }) {
		return
	}
	t.Fatalf("%s: got %v, want a validation error at %v", what, err, loc)
}

// opens is the value a sealed secret opens to in its own workspace.
func (f *fixture) opens(t *testing.T, s *agentsv1.WorkspaceSecret) string {
	t.Helper()
	v, err := f.app.Sealer.Open(agentconfig.SecretOwner(s.WorkspaceId, s.SecretId), s.SealedValue)
	if err != nil {
		t.Fatal(err)
	}
	return string(v)
}

// endpoint is a conversation_config whose model is the agent's own
// endpoint at url, with api_key and request_headers as given (nil: none).
func endpoint(url string, apiKey any, headers map[string]any) []byte {
	custom := map[string]any{"url": url, "model_id": "ft"}
	if apiKey != nil {
		custom["api_key"] = apiKey
	}
	if headers != nil {
		custom["request_headers"] = headers
	}
	b, _ := json.Marshal(map[string]any{"agent": map[string]any{"prompt": map[string]any{"prompt": "p", "llm": "custom-llm", "custom_llm": custom}}})
	return b
}

func secretRef(id string) map[string]any { return map[string]any{"secret_id": id} }

// A secret exists in its own workspace only: another workspace neither
// reads, lists, renames nor deletes it.
func TestASecretLivesInItsWorkspaceOnly(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	s := f.secret(t, "llm key")
	other := f.in("ws_b")

	_, err := f.app.GetSecret(ctx, "ws_b", s.SecretId, 0)
	wantKind(t, err, apperr.NotFound, "reading another workspace's secret")
	_, err = f.app.UpdateSecret(ctx, other, s.SecretId, app.SecretInput{Value: ptr("stolen")})
	wantKind(t, err, apperr.NotFound, "rotating another workspace's secret")
	wantKind(t, f.app.DeleteSecret(ctx, other, s.SecretId), apperr.NotFound, "deleting another workspace's secret")
	if page, err := f.app.ListSecrets(ctx, "ws_b", app.SecretListParams{}); err != nil || len(page.Secrets) != 0 {
		t.Fatalf("another workspace lists %+v, %v", page.Secrets, err)
	}

	got, err := f.app.GetSecret(ctx, "ws_a", s.SecretId, 0)
	if err != nil || got.ID != s.SecretId || got.Name != "llm key" {
		t.Fatalf("the secret in its workspace: %+v %v", got, err)
	}
	if v, _, err := f.app.Secrets.Get(ctx, "ws_a", s.SecretId); err != nil || f.opens(t, v) != "v-llm key" {
		t.Fatal("another workspace's rotation changed the value")
	}
}

// A secret needs a name that is not blank and a value that is not empty;
// a refused one is not created.
func TestASecretNeedsANameAndAValue(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct {
		what  string
		in    app.SecretInput
		field string
	}{
		{"no name", app.SecretInput{Value: ptr("v")}, "name"},
		{"a blank name", app.SecretInput{Name: ptr("  \t"), Value: ptr("v")}, "name"},
		{"no value", app.SecretInput{Name: ptr("k")}, "value"},
		{"an empty value", app.SecretInput{Name: ptr("k"), Value: ptr("")}, "value"},
	} {
		_, err := f.app.CreateSecret(t.Context(), f.cmd(""), c.in)
		wantAt(t, err, c.what, "body", c.field)
	}
	if page, err := f.app.ListSecrets(t.Context(), "ws_a", app.SecretListParams{}); err != nil || len(page.Secrets) != 0 {
		t.Fatalf("refused secrets were created: %+v %v", page.Secrets, err)
	}
}

// A keyed secret write applies once: a retried create answers the first
// secret (its name and value, not the retry's); a retried rename answers
// the first rename. (The edge makes a key's command id unique to its
// workspace: api.CommandID.)
func TestAKeyedSecretWriteAppliesOnce(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	first, err := f.app.CreateSecret(ctx, f.cmd("s-1"), app.SecretInput{Name: ptr("A"), Value: ptr("one")})
	if err != nil {
		t.Fatal(err)
	}
	again, err := f.app.CreateSecret(ctx, f.cmd("s-1"), app.SecretInput{Name: ptr("B"), Value: ptr("two")})
	if err != nil || again.SecretId != first.SecretId || again.Name != "A" || f.opens(t, again) != "one" {
		t.Fatalf("a retried create: %+v %v", again, err)
	}
	if page, _ := f.app.ListSecrets(ctx, "ws_a", app.SecretListParams{}); len(page.Secrets) != 1 {
		t.Fatalf("a retried create made %d secrets", len(page.Secrets))
	}

	if _, err := f.app.UpdateSecret(ctx, f.cmd("r-1"), first.SecretId, app.SecretInput{Name: ptr("renamed")}); err != nil {
		t.Fatal(err)
	}
	replay, err := f.app.UpdateSecret(ctx, f.cmd("r-1"), first.SecretId, app.SecretInput{Name: ptr("other")})
	if err != nil || replay.Name != "renamed" {
		t.Fatalf("a replayed rename: %q %v", replay.GetName(), err)
	}
}

// A secret update that changes nothing (the same name, once trimmed, or
// nothing at all) is not a change: the secret keeps its updated time.
func TestASecretUpdateThatChangesNothingIsNoChange(t *testing.T) {
	f := newFixture(t)
	s := f.secret(t, "llm key")
	f.clock = f.clock.Add(time.Minute)
	for what, in := range map[string]app.SecretInput{
		"the same name": {Name: ptr(" llm key ")},
		"nothing":       {},
	} {
		got, err := f.app.UpdateSecret(t.Context(), f.cmd(""), s.SecretId, in)
		if err != nil || got.UpdatedAtUnix != s.UpdatedAtUnix || got.Name != "llm key" {
			t.Fatalf("an update naming %s: updated at %d (created %d), %v", what, got.GetUpdatedAtUnix(), s.UpdatedAtUnix, err)
		}
	}
}

// A secret answers the live agents that use it, as many as asked (10 by
// default) and whether there are more.
func TestASecretShowsABoundedListOfItsAgents(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	s := f.secret(t, "llm key")
	for range 3 {
		f.create(t, app.CreateInput{ConversationConfig: customLLM(s.SecretId)})
	}
	for _, c := range []struct{ limit, want int }{{0, 3}, {2, 2}, {3, 3}} {
		got, err := f.app.GetSecret(ctx, "ws_a", s.SecretId, c.limit)
		if err != nil || len(got.UsedBy) != c.want || got.More != (c.want < 3) {
			t.Fatalf("limit %d: %d agents, more %v (%v); want %d", c.limit, len(got.UsedBy), got.More, err, c.want)
		}
		page, err := f.app.ListSecrets(ctx, "ws_a", app.SecretListParams{DependencyLimit: c.limit})
		if err != nil || len(page.Secrets) != 1 || len(page.Secrets[0].UsedBy) != c.want || page.Secrets[0].More != (c.want < 3) {
			t.Fatalf("listed, limit %d: %+v %v; want %d", c.limit, page.Secrets, err, c.want)
		}
	}
}

// Deleting a secret agents use is refused naming at most five of them,
// and saying when there are more; an agent using it in a request header
// counts as one using its api_key does.
func TestDeletingASecretInUseNamesAtMostFiveAgents(t *testing.T) {
	f := newFixture(t)
	s := f.secret(t, "llm key")
	var users []string
	for i := range 6 {
		config := customLLM(s.SecretId)
		if i%2 == 0 {
			config = endpoint("https://llm.example.com/v1", nil, map[string]any{"X-Key": secretRef(s.SecretId)})
		}
		users = append(users, f.create(t, app.CreateInput{ConversationConfig: config}).AgentId)
	}
	slices.Sort(users)
	err := f.app.DeleteSecret(t.Context(), f.cmd(""), s.SecretId)
	wantKind(t, err, apperr.Conflict, "deleting a secret six agents use")
	for _, id := range users[:5] {
		if !strings.Contains(err.Error(), id) {
			t.Fatalf("the refusal does not name %s: %v", id, err)
		}
	}
	if strings.Contains(err.Error(), users[5]) || !strings.HasSuffix(err.Error(), "and more; change their configuration to stop using it, then delete it.") {
		t.Fatalf("the refusal names a sixth agent or not that there are more: %v", err)
	}
	if _, err := f.app.GetSecret(t.Context(), "ws_a", s.SecretId, 0); err != nil {
		t.Fatalf("the refused delete deleted it: %v", err)
	}
}

// A secret listing's cursor is good only for the search and workspace it
// was issued for, and a forged one is refused at query.cursor.
func TestASecretCursorIsBoundToItsSearchAndWorkspace(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	for _, name := range []string{"key a", "key b", "key c"} {
		f.secret(t, name)
	}
	page, err := f.app.ListSecrets(ctx, "ws_a", app.SecretListParams{PageSize: 1, Search: "key"})
	if err != nil || page.NextCursor == nil {
		t.Fatalf("first page: %+v %v", page, err)
	}
	for what, c := range map[string]struct {
		workspaceID string
		p           app.SecretListParams
	}{
		"another search":    {"ws_a", app.SecretListParams{PageSize: 1, Search: "k", Cursor: *page.NextCursor}},
		"another workspace": {"ws_b", app.SecretListParams{PageSize: 1, Search: "key", Cursor: *page.NextCursor}},
		"a forged cursor":   {"ws_a", app.SecretListParams{PageSize: 1, Search: "key", Cursor: "eyJuYW1lIjoia2V5IGEifQ"}},
	} {
		_, err := f.app.ListSecrets(ctx, c.workspaceID, c.p)
		wantAt(t, err, what, "query", "cursor")
	}
	next, err := f.app.ListSecrets(ctx, "ws_a", app.SecretListParams{PageSize: 1, Search: " KEY ", Cursor: *page.NextCursor})
	if err != nil || len(next.Secrets) != 1 || next.Secrets[0].Name != "key b" {
		t.Fatalf("the same search, cased and spaced otherwise: %+v %v", next, err)
	}
}
