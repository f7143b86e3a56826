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
