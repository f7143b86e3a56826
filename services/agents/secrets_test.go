package agents

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/principal"
)

const secretValue = "sk-team-4f9a-never-shown"

// A secret's value goes in once and never comes out: not in any answer,
// not on the bus in clear. An agent that uses it keeps it from deletion
// and shows in its used_by; another workspace neither sees nor uses it.
func TestWorkspaceSecrets(t *testing.T) {
	f := newFixture(t)
	code, created := f.do(t, http.MethodPost, "/v1/convai/secrets", `{"type":"new","name":" team-llm-key ","value":"`+secretValue+`"}`)
	if code != 200 || created["type"] != "stored" || created["name"] != "team-llm-key" {
		t.Fatalf("create: %d %v", code, created)
	}
	id := created["secret_id"].(string)
	f.do(t, http.MethodPost, "/v1/convai/secrets", `{"name":"another","value":"v2"}`)

	agentBody := func(secretID string) string {
		return `{"name":"own brain","conversation_config":{"agent":{"prompt":{"prompt":"p","llm":"custom-llm","custom_llm":{
			"url":"http://127.0.0.1:9/v1","model_id":"ft","api_key":{"secret_id":"` + secretID + `"}}}}}}`
	}
	// Where a secret is sent is a workspace admin's choice (whoever picks
	// the endpoint receives the value): a convai_write key may not bind it.
	if code, m := f.do(t, http.MethodPost, "/v1/convai/agents/create", agentBody(id)); code != 403 || m["detail"].(map[string]any)["status"] != "secret_binding_forbidden" {
		t.Fatalf("a writer binds a secret: %d %v", code, m)
	}
	admin := caller
	admin.Permissions = append([]string{"workspace_write"}, caller.Permissions...)
	code, agent := f.doAs(t, admin, http.MethodPost, "/v1/convai/agents/create", agentBody(id))
	if code != 201 {
		t.Fatalf("agent with a secret: %d %v", code, agent)
	}
	agentID := agent["agent_id"].(string)
	// The writer may change all else, not where the secret goes.
	if code, m := f.do(t, http.MethodPatch, "/v1/convai/agents/"+agentID, `{"conversation_config":{"agent":{"prompt":{"prompt":"new words","temperature":0.3}}}}`); code != 200 {
		t.Fatalf("a writer edits the prompt: %d %v", code, m)
	}
	for _, rebind := range []string{
		`{"custom_llm":{"url":"http://127.0.0.1:8/steal"}}`,
		`{"custom_llm":{"request_headers":{"X-Copy":{"secret_id":"` + id + `"}}}}`,
	} {
		if code, m := f.do(t, http.MethodPatch, "/v1/convai/agents/"+agentID, `{"conversation_config":{"agent":{"prompt":`+rebind+`}}}`); code != 403 {
			t.Fatalf("a writer rebinds the secret with %s: %d %v", rebind, code, m)
		}
	}
	if code, m := f.doAs(t, admin, http.MethodPatch, "/v1/convai/agents/"+agentID, `{"conversation_config":{"agent":{"prompt":{"custom_llm":{"url":"http://127.0.0.1:8/v1"}}}}}`); code != 200 {
		t.Fatalf("an admin moves the endpoint: %d %v", code, m)
	}

	code, got := f.do(t, http.MethodGet, "/v1/convai/secrets/"+id, "")
	used := got["used_by"].(map[string]any)["agents"].([]any)
	if code != 200 || len(used) != 1 || used[0].(map[string]any)["id"] != agentID {
		t.Fatalf("get: %d %v", code, got)
	}
	code, page := f.do(t, http.MethodGet, "/v1/convai/secrets?search=TEAM", "")
	if secrets := page["secrets"].([]any); code != 200 || len(secrets) != 1 || secrets[0].(map[string]any)["secret_id"] != id {
		t.Fatalf("search: %d %v", code, page)
	}

	if code, m := f.do(t, http.MethodDelete, "/v1/convai/secrets/"+id, ""); code != 409 || !strings.Contains(fmt.Sprint(m), agentID) {
		t.Fatalf("delete in use: %d %v", code, m)
	}
	if code, m := f.do(t, http.MethodPatch, "/v1/convai/secrets/"+id, `{"type":"update","name":"team-llm-key","value":"rotated-`+secretValue+`"}`); code != 200 || m["secret_id"] != id {
		t.Fatalf("rotate: %d %v", code, m)
	}

	// Another workspace: not found, and its agents cannot point at it.
	other := principal.Principal{WorkspaceID: "ws_b", UserID: "sa_2", Permissions: []string{"convai_read", "convai_write"}}
	if code, _ := f.doAs(t, other, http.MethodGet, "/v1/convai/secrets/"+id, ""); code != 404 {
		t.Fatalf("other workspace get: %d", code)
	}
	if code, m := f.doAs(t, other, http.MethodPost, "/v1/convai/agents/create", agentBody(id)); code != 422 || !hasError(m, "body.conversation_config.agent.prompt.custom_llm.api_key.secret_id", "value_error") {
		t.Fatalf("other workspace's agent: %d %v", code, m)
	}
	if code, _ := f.doAs(t, other, http.MethodDelete, "/v1/convai/secrets/"+id, ""); code != 404 {
		t.Fatalf("other workspace delete: %d", code)
	}

	// The agent stops using it: now it can go.
	if code, m := f.do(t, http.MethodPatch, "/v1/convai/agents/"+agentID, `{"conversation_config":{"agent":{"prompt":{"llm":"gpt-4o-mini","custom_llm":null}}}}`); code != 200 {
		t.Fatalf("agent off the secret: %d %v", code, m)
	}
	if code, m := f.do(t, http.MethodDelete, "/v1/convai/secrets/"+id, ""); code != 204 {
		t.Fatalf("delete: %d %v", code, m)
	}
	if code, _ := f.do(t, http.MethodGet, "/v1/convai/secrets/"+id, ""); code != 404 {
		t.Fatalf("deleted secret: %d", code)
	}
	if code, m := f.do(t, http.MethodPost, "/v1/convai/agents/create", agentBody(id)); code != 422 {
		t.Fatalf("an agent on a deleted secret: %d %v", code, m)
	}

	// Nothing on the bus holds the value in clear.
	stream, err := f.js.Stream(context.Background(), events.AgentsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := stream.Info(context.Background())
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		msg, err := stream.GetMsg(context.Background(), seq)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(msg.Data), secretValue) || strings.Contains(fmt.Sprint(msg.Header), secretValue) {
			t.Fatalf("event %d (%s) holds the secret in clear", seq, msg.Subject)
		}
	}
}

// The endpoint an agent's turns go to is checked when it is configured:
// never cloud metadata or a local file, whatever the allow-list says.
func TestAgentEndpointsObeyTheOutboundRules(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct{ url, typ string }{
		{"http://169.254.169.254/latest/meta-data", "url_scheme"},
		{"https://169.254.169.254/latest/meta-data", "url_forbidden_address"},
		{"file:///etc/passwd", "url_parsing"},
		{"https://10.0.0.7/v1", "url_forbidden_address"},
	} {
		body := `{"conversation_config":{"agent":{"prompt":{"llm":"custom-llm","custom_llm":{"url":"` + c.url + `"}}}}}`
		code, m := f.do(t, http.MethodPost, "/v1/convai/agents/create", body)
		if code != 422 || !hasError(m, "body.conversation_config.agent.prompt.custom_llm.url", c.typ) {
			t.Errorf("%s: %d %v", c.url, code, m)
		}
	}
	_, page := f.do(t, http.MethodGet, "/v1/convai/agents", "")
	if n := len(page["agents"].([]any)); n != 0 {
		t.Fatalf("refused agents were written: %d", n)
	}
}
