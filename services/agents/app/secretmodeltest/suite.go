// Package secretmodeltest is the conformance suite of the secrets' read
// model (app.SecretReadModel): every implementation (MongoDB, memory)
// lists a workspace's live secrets by name, page after page, and finds
// the live agents whose configuration uses a secret.
package secretmodeltest

import (
	"context"
	"fmt"
	"slices"
	"testing"

	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"

	"github.com/voiceai-platform/voiceai/services/agents/app"
)

// Opener opens a secret read model over fresh storage, and the agent
// listing beside it: the agents it applies are the ones AgentsUsing
// answers from.
type Opener func(t *testing.T) (secrets app.SecretReadModel, agents app.ReadModel)

func secret(ws, id, name string) *agentsv1.WorkspaceSecret {
	return &agentsv1.WorkspaceSecret{SecretId: id, WorkspaceId: ws, Name: name, CreatedAtUnix: 1_700_000_000, UpdatedAtUnix: 1_700_000_000}
}

func deleted(s *agentsv1.WorkspaceSecret) *agentsv1.WorkspaceSecret {
	at := int64(1_700_000_100)
	s.DeletedAtUnix = &at
	return s
}

// agent is an agent whose custom LLM endpoint sends secretIDs (the API
// key, then headers).
func agent(ws, id string, secretIDs ...string) *agentsv1.Agent {
	endpoint := `"url":"https://llm.example.com/v1"`
	for i, s := range secretIDs {
		if i == 0 {
			endpoint += `,"api_key":{"secret_id":"` + s + `"}`
			continue
		}
		endpoint += fmt.Sprintf(`,"request_headers":{"X-Token-%d":{"secret_id":"%s"}}`, i, s)
	}
	return &agentsv1.Agent{
		AgentId: id, WorkspaceId: ws, Name: id, CreatedAtUnix: 1_700_000_000,
		ConversationConfigJson: []byte(`{"agent":{"prompt":{"llm":"custom-llm","custom_llm":{` + endpoint + `}}}}`),
	}
}

func names(docs []app.SecretDoc) []string {
	out := []string{}
	for _, d := range docs {
		out = append(out, d.Name+"/"+d.ID)
	}
	return out
}

func agentIDs(docs []app.AgentDoc) []string {
	out := []string{}
	for _, d := range docs {
		out = append(out, d.ID)
	}
	return out
}

// Run checks open against what app.SecretReadModel promises.
func Run(t *testing.T, open Opener) {
	ctx := context.Background()
	apply := func(t *testing.T, rm app.SecretReadModel, seq uint64, s *agentsv1.WorkspaceSecret) {
		t.Helper()
		if err := rm.Apply(ctx, seq, s); err != nil {
			t.Fatal(err)
		}
	}
	list := func(t *testing.T, rm app.SecretReadModel, ws, prefix string, after *app.SecretPosition, limit int) []string {
		t.Helper()
		docs, err := rm.ListSecrets(ctx, ws, prefix, after, limit)
		if err != nil {
			t.Fatal(err)
		}
		return names(docs)
	}

	t.Run("live secrets by name then id, case-insensitive, page after page", func(t *testing.T) {
		rm, _ := open(t)
		for i, s := range []*agentsv1.WorkspaceSecret{
			secret("ws_a", "secret_3", "stripe"), secret("ws_a", "secret_1", "Stripe"), secret("ws_a", "secret_2", "anthropic"),
			secret("ws_a", "secret_4", "Zendesk"), deleted(secret("ws_a", "secret_5", "billing")), secret("ws_b", "secret_6", "aws"),
		} {
			apply(t, rm, uint64(i+1), s)
		}
		want := []string{"anthropic/secret_2", "Stripe/secret_1", "stripe/secret_3", "Zendesk/secret_4"}
		if got := list(t, rm, "ws_a", "", nil, 10); !slices.Equal(got, want) {
			t.Fatalf("listing %v, want %v", got, want)
		}
		var paged []string
		var after *app.SecretPosition
		for range 5 {
			docs, err := rm.ListSecrets(ctx, "ws_a", "", after, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(docs) == 0 {
				break
			}
			paged = append(paged, names(docs)...)
			last := docs[len(docs)-1]
			after = &app.SecretPosition{Name: last.NameLower, ID: last.ID}
		}
		if !slices.Equal(paged, want) {
			t.Fatalf("pages of one %v, want %v", paged, want)
		}
		if got := list(t, rm, "ws_a", "", nil, 2); !slices.Equal(got, want[:2]) {
			t.Fatalf("limit 2: %v", got)
		}
	})

	t.Run("a prefix is case-insensitive and literal", func(t *testing.T) {
		rm, _ := open(t)
		for i, s := range []*agentsv1.WorkspaceSecret{
			secret("ws_a", "secret_1", "Stripe live"), secret("ws_a", "secret_2", "stripe test"), secret("ws_a", "secret_3", "my stripe"),
			secret("ws_a", "secret_4", "a.b key"), secret("ws_a", "secret_5", "axb key"), secret("ws_b", "secret_6", "stripe"),
		} {
			apply(t, rm, uint64(i+1), s)
		}
		if got, want := list(t, rm, "ws_a", "STRIPE", nil, 10), []string{"Stripe live/secret_1", "stripe test/secret_2"}; !slices.Equal(got, want) {
			t.Fatalf("prefix STRIPE: %v, want %v", got, want)
		}
		if got, want := list(t, rm, "ws_a", "a.", nil, 10), []string{"a.b key/secret_4"}; !slices.Equal(got, want) {
			t.Fatalf("prefix a. (a dot is a dot): %v, want %v", got, want)
		}
		if got := list(t, rm, "ws_a", "zz", nil, 10); len(got) != 0 {
			t.Fatalf("a prefix nothing has: %v", got)
		}
	})

	t.Run("the newest state wins; an older or equal sequence is ignored", func(t *testing.T) {
		rm, _ := open(t)
		apply(t, rm, 5, secret("ws_a", "secret_1", "renamed"))
		apply(t, rm, 3, secret("ws_a", "secret_1", "original")) // late
		apply(t, rm, 5, secret("ws_a", "secret_1", "again"))    // the same sequence again
		if got, want := list(t, rm, "ws_a", "", nil, 10), []string{"renamed/secret_1"}; !slices.Equal(got, want) {
			t.Fatalf("after a late update: %v, want %v", got, want)
		}
		apply(t, rm, 6, deleted(secret("ws_a", "secret_1", "renamed")))
		if got := list(t, rm, "ws_a", "", nil, 10); len(got) != 0 {
			t.Fatalf("a deleted secret is listed: %v", got)
		}
		if got := list(t, rm, "ws_none", "", nil, 10); len(got) != 0 {
			t.Fatalf("a workspace without secrets: %v", got)
		}
	})

	t.Run("agents using a secret: live, of the workspace, by id", func(t *testing.T) {
		rm, agents := open(t)
		for i, a := range []*agentsv1.Agent{
			agent("ws_a", "agent_3", "secret_1"), agent("ws_a", "agent_1", "secret_2", "secret_1"), agent("ws_a", "agent_2", "secret_2"),
			agent("ws_a", "agent_4", "secret_1"), agent("ws_a", "agent_5"), agent("ws_b", "agent_6", "secret_1"),
		} {
			if err := agents.Apply(ctx, uint64(i+1), a); err != nil {
				t.Fatal(err)
			}
		}
		gone := agent("ws_a", "agent_4", "secret_1")
		at := int64(1_700_000_200)
		gone.DeletedAtUnix = &at
		if err := agents.Apply(ctx, 10, gone); err != nil {
			t.Fatal(err)
		}
		// agent_3 stops using it.
		if err := agents.Apply(ctx, 11, agent("ws_a", "agent_3", "secret_2")); err != nil {
			t.Fatal(err)
		}
		using := func(ws, secretID string, limit int) []string {
			t.Helper()
			docs, err := rm.AgentsUsing(ctx, ws, secretID, limit)
			if err != nil {
				t.Fatal(err)
			}
			return agentIDs(docs)
		}
		if got, want := using("ws_a", "secret_1", 10), []string{"agent_1"}; !slices.Equal(got, want) {
			t.Fatalf("agents using secret_1: %v, want %v", got, want)
		}
		if got, want := using("ws_a", "secret_2", 10), []string{"agent_1", "agent_2", "agent_3"}; !slices.Equal(got, want) {
			t.Fatalf("agents using secret_2: %v, want %v", got, want)
		}
		if got, want := using("ws_a", "secret_2", 2), []string{"agent_1", "agent_2"}; !slices.Equal(got, want) {
			t.Fatalf("limit 2: %v, want %v", got, want)
		}
		if got, want := using("ws_b", "secret_1", 10), []string{"agent_6"}; !slices.Equal(got, want) {
			t.Fatalf("another workspace: %v, want %v", got, want)
		}
		if got := using("ws_a", "secret_none", 10); len(got) != 0 {
			t.Fatalf("a secret nobody uses: %v", got)
		}
	})
}
