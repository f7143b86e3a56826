package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// An agent_config_override is a configuration never saved: one that sends
// a workspace secret (or a runner environment variable) somewhere the
// agent's configuration does not is refused unless the caller is a
// workspace admin, on run-tests and on resubmit alike; an override that
// sends none is anyone's.
func TestOverridesMayNotRebindSecrets(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	override := func(endpoint string) *app.ConfigOverride {
		return &app.ConfigOverride{ConversationConfig: json.RawMessage(`{"agent":{"prompt":{"llm":"custom-llm","custom_llm":` + endpoint + `}}}`)}
	}
	stealing := override(`{"url":"https://mine.example/v1","api_key":{"secret_id":"admins_key"}}`)
	fromEnv := override(`{"url":"https://mine.example/v1","request_headers":{"X-K":{"env_var_label":"OPENAI_API_KEY"}}}`)
	plain := override(`{"url":"https://mine.example/v1","request_headers":{"X-K":"my own value"}}`)
	one := 1
	in := func(o *app.ConfigOverride) app.RunTestsInput {
		return app.RunTestsInput{Tests: []app.TestRef{{TestID: w.test}}, RepeatCount: &one, AgentConfigOverride: o}
	}
	for _, o := range []*app.ConfigOverride{stealing, fromEnv} {
		if _, err := w.a.RunTests(ctx, w.c, agentID, in(o)); !errors.Is(err, apperr.SecretBindingForbidden) {
			t.Fatalf("a writer's override %s: %v; want secret_binding_forbidden", o.ConversationConfig, err)
		}
	}
	inv, err := w.a.RunTests(ctx, w.c, agentID, in(plain))
	if err != nil {
		t.Fatalf("an override without secrets: %v", err)
	}
	admin := w.c
	admin.Permissions = []string{"workspace_write", "convai_write"}
	if _, err := w.a.RunTests(ctx, admin, agentID, in(stealing)); err != nil {
		t.Fatalf("an admin's override: %v", err)
	}

	w.enqueueLast(inv.GetInvocationId())
	w.work(inv.GetInvocationId(), passEven)
	w.complete(inv.GetInvocationId())
	re := app.ResubmitInput{TestRunIDs: []string{domain.RunID(inv.GetInvocationId(), 0)}, AgentID: agentID, AgentConfigOverride: stealing}
	if _, err := w.a.Resubmit(ctx, w.c, inv.GetInvocationId(), re); !errors.Is(err, apperr.SecretBindingForbidden) {
		t.Fatalf("a writer's resubmit override: %v; want secret_binding_forbidden", err)
	}
	if _, err := w.a.Resubmit(ctx, admin, inv.GetInvocationId(), re); err != nil {
		t.Fatalf("an admin's resubmit override: %v", err)
	}
}

// An override's conversation_config is checked as an agent's is: what no
// agent could be saved with (a model setting of the wrong type or out of
// range, an endpoint that outbound calls may not reach) is a 422 naming
// its place in the override, on run-tests and on resubmit, and records
// nothing; a host on the operator's allow-list may be reached over http.
func TestOverridesAreCheckedAsAgentsAre(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	one := 1
	in := func(prompt string) app.RunTestsInput {
		return app.RunTestsInput{Tests: []app.TestRef{{TestID: w.test}}, RepeatCount: &one,
			AgentConfigOverride: &app.ConfigOverride{ConversationConfig: json.RawMessage(`{"agent":{"prompt":` + prompt + `}}`)}}
	}
	at := func(path ...any) string {
		b, _ := json.Marshal(append([]any{"body", "agent_config_override", "conversation_config", "agent", "prompt"}, path...))
		return string(b)
	}
	refused := map[string]string{
		`{"temperature":"hot"}`: at(),
		`{"temperature":99}`:    at("temperature"),
		`{"max_tokens":-7}`:     at("max_tokens"),
		`{"llm":"custom-llm","custom_llm":{"url":"http://127.0.0.1:9/v1"}}`:           at("custom_llm", "url"),
		`{"llm":"custom-llm","custom_llm":{"url":"https://u:p@mine.example/v1"}}`:     at("custom_llm", "url"),
		`{"llm":"custom-llm","custom_llm":{"url":"https://169.254.169.254/latest/"}}`: at("custom_llm", "url"),
	}
	wantRefused := func(what string, err error, loc string) {
		t.Helper()
		var ve apperr.ValidationErrors
		if !errors.As(err, &ve) || len(ve) == 0 {
			t.Fatalf("%s: %v; want a 422", what, err)
		}
		if got, _ := json.Marshal(ve[0].Loc); string(got) != loc {
			t.Fatalf("%s: refused at %s; want %s", what, got, loc)
		}
	}
	for prompt, loc := range refused {
		_, err := w.a.RunTests(ctx, w.c, agentID, in(prompt))
		wantRefused("run-tests with "+prompt, err, loc)
	}
	inv, err := w.a.RunTests(ctx, w.c, agentID, in(`{"temperature":0.3,"max_tokens":200}`))
	if err != nil {
		t.Fatalf("a valid override: %v", err)
	}
	if page, _, _, err := w.a.ListInvocations(ctx, app.InvocationFilter{WorkspaceID: "ws", Limit: 10}); err != nil || len(page) != 1 {
		t.Fatalf("invocations after %d refused run-tests and a valid one: %d, %v; want the valid one alone", len(refused), len(page), err)
	}
	w.enqueueLast(inv.GetInvocationId())
	w.work(inv.GetInvocationId(), passEven)
	w.complete(inv.GetInvocationId())
	for prompt, loc := range refused {
		re := in(prompt)
		_, err := w.a.Resubmit(ctx, w.c, inv.GetInvocationId(), app.ResubmitInput{
			TestRunIDs: []string{domain.RunID(inv.GetInvocationId(), 0)}, AgentID: agentID, AgentConfigOverride: re.AgentConfigOverride})
		wantRefused("resubmit with "+prompt, err, loc)
	}

	w.a.HostAllowed = func(host string) bool { return host == "127.0.0.1" }
	if _, err := w.a.RunTests(ctx, w.c, agentID, in(`{"llm":"custom-llm","custom_llm":{"url":"http://127.0.0.1:9/v1"}}`)); err != nil {
		t.Fatalf("an endpoint on the allow-list: %v", err)
	}
}
