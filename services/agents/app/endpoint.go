package app

import (
	"context"
	"errors"

	"github.com/voiceai-platform/voiceai/pkg/agentconfig"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/principal"
)

// checkModel validates what a configuration says about the model that
// plays the agent: its own endpoint (custom_llm) is one outbound calls may
// reach, and every workspace secret it authenticates with exists in the
// workspace. Checked again by the runner when it connects. Then, as
// whoever chooses where a secret (or a runner environment variable) is
// sent receives its value, only a workspace admin may send one somewhere
// the configuration before (nil for a new agent) did not
// (agentconfig.Rebinds): a convai_write key may change everything else,
// keep or drop bindings, but not point a secret at its own endpoint.
func (a *App) checkModel(ctx context.Context, caller principal.Principal, before, conversationConfig []byte) error {
	if err := a.checkEndpoint(ctx, caller.WorkspaceID, conversationConfig); err != nil {
		return err
	}
	if !caller.IsAdmin() && agentconfig.Rebinds(before, conversationConfig) {
		return apperr.SecretBindingForbidden
	}
	return nil
}

func (a *App) checkEndpoint(ctx context.Context, workspaceID string, conversationConfig []byte) error {
	var v apperr.Validator
	at := func(loc ...any) []any { return append([]any{"body", "conversation_config"}, loc...) }
	p, problems := agentconfig.Check(conversationConfig, a.HostAllowed)
	for _, pr := range problems {
		v.Add(pr.Msg, pr.Type, at(pr.Loc...)...)
	}
	if e := p.Endpoint; e != nil {
		exists := func(ref *agentconfig.Ref, loc ...any) error {
			if ref == nil || ref.SecretID == "" {
				return nil
			}
			_, _, err := a.Secrets.Get(ctx, workspaceID, ref.SecretID)
			if errors.Is(err, apperr.SecretNotFound) {
				v.Add("No workspace secret with that id exists in this workspace", "value_error", at(append(loc, "secret_id")...)...)
				return nil
			}
			return err
		}
		if err := exists(e.APIKey, "agent", "prompt", "custom_llm", "api_key"); err != nil {
			return err
		}
		for _, h := range e.Headers {
			if err := exists(h.Ref, "agent", "prompt", "custom_llm", "request_headers", h.Name); err != nil {
				return err
			}
		}
	}
	return v.Err()
}
