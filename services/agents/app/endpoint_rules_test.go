package app_test

import (
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/agents/app"
)

// member is a caller of the fixture's workspace who may write agents but
// is no workspace admin.
func (f *fixture) member() principal.Caller {
	return principal.Caller{Principal: principal.Principal{WorkspaceID: "ws_a", UserID: "user_2", Permissions: []string{"convai_read", "convai_write"}}}
}

// Only a workspace admin chooses where a secret is sent: a member may not
// create an agent that sends one, nor point an admin's binding at another
// URL or header, but may change everything else, and drop the binding.
func TestOnlyAnAdminChoosesWhereASecretIsSent(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	s := f.secret(t, "llm key")
	member := f.member()

	_, err := f.app.Create(ctx, member, app.CreateInput{ConversationConfig: customLLM(s.SecretId)})
	wantKind(t, err, apperr.Forbidden, "a member creating an agent that sends a secret")
	a := f.create(t, app.CreateInput{ConversationConfig: customLLM(s.SecretId)})

	for what, patch := range map[string]string{
		"another URL":    `{"agent":{"prompt":{"custom_llm":{"url":"https://attacker.example.com/v1"}}}}`,
		"another header": `{"agent":{"prompt":{"custom_llm":{"api_key":null,"request_headers":{"X-Key":{"secret_id":"` + s.SecretId + `"}}}}}}`,
	} {
		_, err := f.app.Update(ctx, member, a.AgentId, app.UpdateInput{ConversationConfig: []byte(patch)})
		wantKind(t, err, apperr.Forbidden, "a member sending the secret to "+what)
	}
	if got, _, err := f.app.Agents.Get(ctx, "ws_a", a.AgentId); err != nil || string(got.ConversationConfigJson) != string(a.ConversationConfigJson) {
		t.Fatalf("a refused rebinding changed the agent: %s %v", got.GetConversationConfigJson(), err)
	}

	for what, patch := range map[string]string{
		"the first message":          `{"agent":{"first_message":"Hi"}}`,
		"the model, keeping its key": `{"agent":{"prompt":{"custom_llm":{"model_id":"ft-2"}}}}`,
		"the binding, dropped":       `{"agent":{"prompt":{"custom_llm":{"api_key":null}}}}`,
	} {
		if _, err := f.app.Update(ctx, member, a.AgentId, app.UpdateInput{ConversationConfig: []byte(patch)}); err != nil {
			t.Fatalf("a member changing %s: %v", what, err)
		}
	}
}

// An agent's own endpoint must be one the platform may call: https, or
// http to a host the operator allowed, and no private or metadata address
// unless allowed (metadata never). A refused URL is refused at its field,
// on create and on update.
func TestAnEndpointThePlatformRefusesIsInvalid(t *testing.T) {
	f := newFixture(t)
	f.app.HostAllowed = func(host string) bool {
		return host == "llm.internal" || host == "10.0.0.7" || host == "169.254.169.254"
	}
	ctx := t.Context()
	a := f.create(t, app.CreateInput{Name: ptr("Own model")})
	for _, c := range []struct {
		url string
		ok  bool
	}{
		{"https://llm.example.com/v1", true},
		{"http://llm.internal/v1", true},
		{"https://10.0.0.7/v1", true},
		{"http://llm.example.com/v1", false},
		{"https://10.0.0.8/v1", false},
		{"https://169.254.169.254/latest", false},
		{"https://2130706433/v1", false},
		{"llm.example.com/v1", false},
	} {
		config := endpoint(c.url, nil, nil)
		_, createErr := f.app.Create(ctx, f.cmd(""), app.CreateInput{ConversationConfig: config})
		_, updateErr := f.app.Update(ctx, f.cmd(""), a.AgentId, app.UpdateInput{ConversationConfig: config})
		for op, err := range map[string]error{"create": createErr, "update": updateErr} {
			if c.ok {
				if err != nil {
					t.Fatalf("%s to %s: %v", op, c.url, err)
				}
				continue
			}
			wantAt(t, err, op+" to "+c.url, "body", "conversation_config", "agent", "prompt", "custom_llm", "url")
		}
	}
}

// Every workspace secret an endpoint names, as its api_key or in a
// request header, exists in the caller's workspace; a runner environment
// variable or a literal header names none. Refused at the reference, on
// create and on update, which then changes nothing.
func TestEveryEndpointSecretExistsInTheWorkspace(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	mine := f.secret(t, "mine")
	theirs, err := f.app.CreateSecret(ctx, f.in("ws_b"), app.SecretInput{Name: ptr("theirs"), Value: ptr("v")})
	if err != nil {
		t.Fatal(err)
	}
	const url = "https://llm.example.com/v1"
	header := []any{"body", "conversation_config", "agent", "prompt", "custom_llm", "request_headers", "X-Key", "secret_id"}
	for _, c := range []struct {
		what    string
		headers map[string]any
		at      []any // nil: accepted
	}{
		{"an unknown secret", map[string]any{"X-Key": secretRef("secret_unknown")}, header},
		{"another workspace's secret", map[string]any{"X-Key": secretRef(theirs.SecretId)}, header},
		{"its own secret", map[string]any{"X-Key": secretRef(mine.SecretId)}, nil},
		{"an environment variable", map[string]any{"X-Key": map[string]any{"env_var_label": "LLM_KEY"}}, nil},
		{"a literal", map[string]any{"X-Key": "plain"}, nil},
	} {
		config := endpoint(url, secretRef(mine.SecretId), c.headers)
		a := f.create(t, app.CreateInput{ConversationConfig: endpoint(url, secretRef(mine.SecretId), nil)})
		_, createErr := f.app.Create(ctx, f.cmd(""), app.CreateInput{ConversationConfig: config})
		_, updateErr := f.app.Update(ctx, f.cmd(""), a.AgentId, app.UpdateInput{ConversationConfig: config})
		for op, err := range map[string]error{"create": createErr, "update": updateErr} {
			if c.at == nil {
				if err != nil {
					t.Fatalf("%s with a header naming %s: %v", op, c.what, err)
				}
				continue
			}
			wantAt(t, err, op+" with a header naming "+c.what, c.at...)
		}
		if got, _, err := f.app.Agents.Get(ctx, "ws_a", a.AgentId); c.at != nil && (err != nil || got.UpdatedAtUnix != a.UpdatedAtUnix || string(got.ConversationConfigJson) != string(a.ConversationConfigJson)) {
			t.Fatalf("a refused update naming %s changed the agent: %s %v", c.what, got.GetConversationConfigJson(), err)
		}
	}
	_, err = f.app.Create(ctx, f.cmd(""), app.CreateInput{ConversationConfig: endpoint(url, map[string]any{"env_var_label": "LLM_KEY"}, nil)})
	if err != nil {
		t.Fatalf("an api_key from the runner's environment: %v", err)
	}
}
