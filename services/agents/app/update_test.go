package app_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/agentconfig"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/agents/app"
)

// An update changes what it names and nothing else, and one that changes
// nothing is not a change: the agent keeps its updated time.
func TestAnUpdateChangesOnlyWhatItNames(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.create(t, app.CreateInput{Name: ptr("Refunds"), SystemPrompt: ptr("Be precise."), Tags: []string{"prod"}})
	f.clock = f.clock.Add(time.Minute)
	same, err := f.app.Update(ctx, f.cmd(""), a.AgentId, app.UpdateInput{Name: ptr(" Refunds "), Tags: &[]string{"prod"}})
	if err != nil || same.UpdatedAtUnix != a.UpdatedAtUnix {
		t.Fatalf("an update that changes nothing: updated at %d (created %d), %v", same.GetUpdatedAtUnix(), a.UpdatedAtUnix, err)
	}

	upd, err := f.app.Update(ctx, f.cmd(""), a.AgentId, app.UpdateInput{
		SystemPrompt: ptr("Be brief."), Tags: &[]string{"prod", "eu"}, PlatformSettings: []byte(`{"privacy":{"record_voice":false}}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if upd.Name != "Refunds" || upd.SystemPrompt != "Be brief." || !slices.Equal(upd.Tags, []string{"prod", "eu"}) ||
		string(upd.PlatformSettingsJson) != `{"privacy":{"record_voice":false}}` || upd.UpdatedAtUnix != f.clock.Unix() {
		t.Fatalf("updated: %+v", upd)
	}
	got, _, err := f.app.Agents.Get(ctx, "ws_a", a.AgentId)
	if err != nil || got.SystemPrompt != "Be brief." {
		t.Fatalf("read back: %+v %v", got, err)
	}
	_, err = f.app.Update(ctx, f.cmd(""), "agent_missing", app.UpdateInput{Name: ptr("x")})
	wantKind(t, err, apperr.NotFound, "an unknown agent")

	// A patch that cannot be merged is refused at its field, and changes
	// nothing.
	for field, in := range map[string]app.UpdateInput{
		"conversation_config": {ConversationConfig: []byte(`{"agent":`)},
		"platform_settings":   {PlatformSettings: []byte(`{"privacy":`)},
	} {
		_, err = f.app.Update(ctx, f.cmd(""), a.AgentId, in)
		if ve, ok := err.(apperr.ValidationErrors); !ok || len(ve) != 1 || fmt.Sprint(ve[0].Loc) != fmt.Sprint([]any{"body", field}) {
			t.Fatalf("a %s patch that is not JSON: %v, want a validation error at body.%s", field, err, field)
		}
	}
	if after, _, err := f.app.Agents.Get(ctx, "ws_a", a.AgentId); err != nil || after.UpdatedAtUnix != upd.UpdatedAtUnix {
		t.Fatalf("a refused patch changed the agent: %+v %v", after, err)
	}
}

// A listing pages through the workspace's agents without repeating or
// skipping one, filtered and sorted as asked; a cursor is good only for
// the filters it was issued for.
func TestListingPagesAndFilters(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var made []string
	for _, name := range []string{"Delta", "alpha", "Charlie", "bravo", "Echo"} {
		a := f.create(t, app.CreateInput{Name: ptr(name), Tags: []string{map[bool]string{true: "eu", false: "us"}[len(made)%2 == 0]}})
		made = append(made, a.AgentId)
		f.clock = f.clock.Add(time.Second)
	}
	other := f.caller
	other.WorkspaceID = "ws_b"
	if _, err := f.app.Create(ctx, principal.Caller{Principal: other}, app.CreateInput{Name: ptr("Foreign")}); err != nil {
		t.Fatal(err)
	}

	walk := func(p app.ListParams) []string {
		var names []string
		for range 10 {
			page, err := f.app.List(ctx, "ws_a", "user_1", p)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range page.Agents {
				names = append(names, d.Name)
			}
			if !page.HasMore {
				return names
			}
			p.Cursor = *page.NextCursor
		}
		t.Fatal("the listing did not end")
		return nil
	}
	if got := walk(app.ListParams{PageSize: 2}); !slices.Equal(got, []string{"Echo", "bravo", "Charlie", "alpha", "Delta"}) {
		t.Fatalf("newest first, two a page: %v", got)
	}
	if got := walk(app.ListParams{PageSize: 2, SortBy: "name"}); !slices.Equal(got, []string{"alpha", "bravo", "Charlie", "Delta", "Echo"}) {
		t.Fatalf("by name, case aside: %v", got)
	}
	if got := walk(app.ListParams{Tags: []string{"eu"}}); !slices.Equal(got, []string{"Echo", "Charlie", "Delta"}) {
		t.Fatalf("tagged eu: %v", got)
	}
	if got := walk(app.ListParams{Search: "ALP"}); !slices.Equal(got, []string{"alpha"}) {
		t.Fatalf("searched: %v", got)
	}

	first, err := f.app.List(ctx, "ws_a", "user_1", app.ListParams{PageSize: 2})
	if err != nil || first.NextCursor == nil {
		t.Fatalf("first page: %+v %v", first, err)
	}
	_, err = f.app.List(ctx, "ws_a", "user_1", app.ListParams{PageSize: 2, SortBy: "name", Cursor: *first.NextCursor})
	wantKind(t, err, apperr.Invalid, "a cursor issued for another order")
	_, err = f.app.List(ctx, "ws_b", "user_1", app.ListParams{PageSize: 2, Cursor: *first.NextCursor})
	wantKind(t, err, apperr.Invalid, "a cursor issued in another workspace")
}

// A secret is renamed or given a new value, sealed for its own workspace
// and id; its listing pages by name.
func TestSecretRotationAndListing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s := f.secretOf(t, "llm key", "sk-1")
	f.secretOf(t, "another key", "sk-2")
	renamed, err := f.app.UpdateSecret(ctx, f.cmd(""), s.SecretId, app.SecretInput{Name: ptr("  model key ")})
	if err != nil || renamed.Name != "model key" || string(renamed.SealedValue) != string(s.SealedValue) {
		t.Fatalf("renamed: %+v %v", renamed, err)
	}
	rotated, err := f.app.UpdateSecret(ctx, f.cmd(""), s.SecretId, app.SecretInput{Value: ptr("sk-rotated")})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := f.app.Sealer.Open(agentconfig.SecretOwner("ws_a", s.SecretId), rotated.SealedValue); err != nil || string(v) != "sk-rotated" {
		t.Fatalf("the new value opens as %q, %v", v, err)
	}
	if _, err := f.app.Sealer.Open(agentconfig.SecretOwner("ws_b", s.SecretId), rotated.SealedValue); err == nil {
		t.Fatal("the value opens for another workspace")
	}
	_, err = f.app.UpdateSecret(ctx, principal.In("ws_b"), s.SecretId, app.SecretInput{Name: ptr("x")})
	wantKind(t, err, apperr.NotFound, "another workspace's secret")

	page, err := f.app.ListSecrets(ctx, "ws_a", app.SecretListParams{PageSize: 1})
	if err != nil || len(page.Secrets) != 1 || page.Secrets[0].Name != "another key" || page.NextCursor == nil {
		t.Fatalf("first page: %+v %v", page, err)
	}
	page, err = f.app.ListSecrets(ctx, "ws_a", app.SecretListParams{PageSize: 1, Cursor: *page.NextCursor})
	if err != nil || len(page.Secrets) != 1 || page.Secrets[0].Name != "model key" || page.NextCursor != nil {
		t.Fatalf("second page: %+v %v", page, err)
	}
	page, err = f.app.ListSecrets(ctx, "ws_a", app.SecretListParams{Search: "MODEL"})
	if err != nil || len(page.Secrets) != 1 || page.Secrets[0].ID != s.SecretId {
		t.Fatalf("searched by name prefix: %+v %v", page, err)
	}
}
