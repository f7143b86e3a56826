package app_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/agents/app"
	"github.com/voiceai-platform/voiceai/services/agents/domain"
)

// Every string of the free-form configurations is bounded as the prompt
// is, on create and on update, and refused where it is.
func TestConfigurationStringsAreBounded(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	a := f.create(t, app.CreateInput{Name: ptr("Bounded")})
	long := func(n int) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"notes": []string{strings.Repeat("é", n)}})
		return b
	}
	for _, field := range []string{"conversation_config", "platform_settings", "workflow"} {
		with := func(raw json.RawMessage) (app.CreateInput, app.UpdateInput) {
			switch field {
			case "conversation_config":
				return app.CreateInput{ConversationConfig: raw}, app.UpdateInput{ConversationConfig: raw}
			case "platform_settings":
				return app.CreateInput{PlatformSettings: raw}, app.UpdateInput{PlatformSettings: raw}
			}
			return app.CreateInput{Workflow: raw}, app.UpdateInput{Workflow: raw}
		}
		create, update := with(long(domain.MaxPromptLen + 1))
		_, err := f.app.Create(ctx, f.cmd(""), create)
		wantAt(t, err, "create with a long string in "+field, "body", field, "notes", 0)
		_, err = f.app.Update(ctx, f.cmd(""), a.AgentId, update)
		wantAt(t, err, "update with a long string in "+field, "body", field, "notes", 0)

		create, update = with(long(domain.MaxPromptLen))
		if _, err := f.app.Create(ctx, f.cmd(""), create); err != nil {
			t.Fatalf("create with a string of the bound in %s: %v", field, err)
		}
		if _, err := f.app.Update(ctx, f.cmd(""), a.AgentId, update); err != nil {
			t.Fatalf("update with a string of the bound in %s: %v", field, err)
		}
	}
}

// An agent's type and workflow are kept as sent (the workflow with the
// keys every workflow carries); updating either to what it is already is
// no change.
func TestAgentTypeAndWorkflow(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	const full = `{"edges":{},"nodes":{"start":{"type":"start"}},"prevent_subagent_loops":false}`
	a := f.create(t, app.CreateInput{AgentType: ptr("chat"), Workflow: []byte(`{"nodes":{"start":{"type":"start"}}}`)})
	if a.AgentType != "chat" || string(a.WorkflowJson) != full {
		t.Fatalf("created: type %q, workflow %s", a.AgentType, a.WorkflowJson)
	}
	if plain := f.create(t, app.CreateInput{}); plain.AgentType != "" || plain.WorkflowJson != nil {
		t.Fatalf("an agent created with neither: type %q, workflow %s", plain.AgentType, plain.WorkflowJson)
	}

	f.clock = f.clock.Add(time.Minute)
	same, err := f.app.Update(ctx, f.cmd(""), a.AgentId, app.UpdateInput{AgentType: ptr("chat"), Workflow: []byte(full)})
	if err != nil || same.UpdatedAtUnix != a.UpdatedAtUnix {
		t.Fatalf("an update to the same type and workflow: updated at %d (created %d), %v", same.GetUpdatedAtUnix(), a.UpdatedAtUnix, err)
	}
	for _, c := range []struct {
		in                 app.UpdateInput
		wantType, workflow string
	}{
		{app.UpdateInput{AgentType: ptr("voice")}, "voice", full},
		{app.UpdateInput{Workflow: []byte(`{"nodes":{"start":{"type":"start"}},"prevent_subagent_loops":true}`)}, "voice", `{"edges":{},"nodes":{"start":{"type":"start"}},"prevent_subagent_loops":true}`},
	} {
		f.clock = f.clock.Add(time.Minute)
		upd, err := f.app.Update(ctx, f.cmd(""), a.AgentId, c.in)
		if err != nil || upd.AgentType != c.wantType || string(upd.WorkflowJson) != c.workflow || upd.UpdatedAtUnix != f.clock.Unix() {
			t.Fatalf("updated: %+v %v", upd, err)
		}
	}
}

// A listing goes either way as asked, lists only the caller's own agents
// for "@me", and keeps archived agents apart when asked; its cursor is
// good only for the archive filter it was issued for.
func TestListingDirectionOwnerAndArchive(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	f.create(t, app.CreateInput{Name: ptr("Alpha")})
	f.clock = f.clock.Add(time.Second)
	if _, err := f.app.Create(ctx, principal.Caller{Principal: principal.Principal{WorkspaceID: "ws_a", UserID: "user_2"}}, app.CreateInput{Name: ptr("Bravo")}); err != nil {
		t.Fatal(err)
	}
	f.clock = f.clock.Add(time.Second)
	f.create(t, app.CreateInput{Name: ptr("Charlie"), PlatformSettings: []byte(`{"archived":true}`)})

	names := func(p app.ListParams) []string {
		t.Helper()
		page, err := f.app.List(ctx, "ws_a", "user_1", p)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range page.Agents {
			out = append(out, d.Name)
		}
		return out
	}
	for _, c := range []struct {
		what string
		p    app.ListParams
		want []string
	}{
		{"oldest first", app.ListParams{SortDirection: "asc"}, []string{"Alpha", "Bravo", "Charlie"}},
		{"by name, Z first", app.ListParams{SortBy: "name", SortDirection: "desc"}, []string{"Charlie", "Bravo", "Alpha"}},
		{"mine", app.ListParams{CreatedBy: "@me", SortDirection: "asc"}, []string{"Alpha", "Charlie"}},
		{"by another user", app.ListParams{CreatedBy: "user_2"}, []string{"Bravo"}},
		{"archived", app.ListParams{Archived: ptr(true)}, []string{"Charlie"}},
		{"not archived", app.ListParams{Archived: ptr(false)}, []string{"Bravo", "Alpha"}},
	} {
		if got := names(c.p); !slices.Equal(got, c.want) {
			t.Fatalf("%s: %v, want %v", c.what, got, c.want)
		}
	}

	page, err := f.app.List(ctx, "ws_a", "user_1", app.ListParams{PageSize: 1, Archived: ptr(false)})
	if err != nil || page.NextCursor == nil {
		t.Fatalf("first unarchived page: %+v %v", page, err)
	}
	for what, p := range map[string]app.ListParams{
		"no archive filter": {PageSize: 1, Cursor: *page.NextCursor},
		"the other filter":  {PageSize: 1, Archived: ptr(true), Cursor: *page.NextCursor},
		"another direction": {PageSize: 1, Archived: ptr(false), SortDirection: "asc", Cursor: *page.NextCursor},
		"another creator":   {PageSize: 1, Archived: ptr(false), CreatedBy: "@me", Cursor: *page.NextCursor},
	} {
		_, err := f.app.List(ctx, "ws_a", "user_1", p)
		wantAt(t, err, "a cursor used with "+what, "query", "cursor")
	}
	if got := names(app.ListParams{PageSize: 1, Archived: ptr(false), Cursor: *page.NextCursor}); !slices.Equal(got, []string{"Alpha"}) {
		t.Fatalf("the next unarchived page: %v", got)
	}
}
