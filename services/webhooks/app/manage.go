package app

import (
	"context"
	"maps"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/aggregate"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/ids"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// Create validates and creates a webhook. It returns the webhook and its
// signing secret in plain text (generated when the body has none); the
// secret is shown here only. A retried create with the same idempotency
// key answers the first one.
func (a *App) Create(ctx context.Context, p principal.Caller, in domain.Input) (*webhooksv1.Webhook, string, error) {
	idempotencyKey := p.CommandID
	spec, err := domain.ValidateCreate(in, a.Sender.HostAllowed)
	if err != nil {
		return nil, "", err
	}
	id := ids.New("whk")
	if idempotencyKey != "" {
		id = "whk_" + esproto.StableID("webhooks|"+p.WorkspaceID, idempotencyKey)
	}
	secret := spec.Secret
	if secret == "" {
		if secret, err = domain.NewSecret(); err != nil {
			return nil, "", err
		}
	}
	if err := a.checkRoom(p.WorkspaceID, id); err != nil {
		return nil, "", err
	}
	sealed, err := a.Sealer.Seal(id, secret)
	if err != nil {
		return nil, "", err
	}
	now := a.Now()
	w := &webhooksv1.Webhook{
		WebhookId: id, WorkspaceId: p.WorkspaceID, Url: spec.URL, Events: spec.Events, Active: spec.Active, Relay: spec.Relay,
		RetryConfig: retryConfigOf(spec.Retry), SecretSealed: sealed, SecretHint: domain.SecretHint(secret),
		Name: spec.Name, RequestHeaders: spec.Headers,
		CreatedByUserId: p.UserID, CreatedAtUnix: now.Unix(), UpdatedAtUnix: now.Unix(), CreatedAtUnixMs: now.UnixMilli(), EnabledAtUnixMs: now.UnixMilli(),
	}
	meta := esproto.Meta(ctx, p.WorkspaceID, idempotencyKey, now)
	got, dup, err := a.Webhooks.Create(ctx, p.WorkspaceID, id, meta, &webhooksv1.WebhookCreated{Meta: meta, Webhook: w}, w)
	if err != nil {
		return nil, "", err
	}
	if dup {
		// The first attempt created it: answer its secret.
		plain, err := a.Sealer.Open(got.GetWebhookId(), got.GetSecretSealed())
		if err != nil {
			return nil, "", err
		}
		return got, string(plain), nil
	}
	return got, secret, nil
}

// checkRoom refuses a new webhook in a workspace that has
// MaxPerWorkspace. The count is the registry's, not taken under a lock:
// creates racing each other may take a workspace over by what they add.
// A keyed retry of a create that made its webhook is answered as it was.
func (a *App) checkRoom(workspaceID, id string) error {
	if a.MaxPerWorkspace <= 0 {
		return nil
	}
	if _, made := a.Registry.Get(workspaceID, id); made {
		return nil
	}
	if len(a.Registry.List(workspaceID)) >= a.MaxPerWorkspace {
		return apperr.WorkspaceLimitReached("webhooks", a.MaxPerWorkspace, "delete one before creating another")
	}
	return nil
}

// Update applies a PUT: the fields present replace the current ones.
// Re-activating a webhook the dispatcher disabled clears the reason. With
// an idempotency key a replay of the same request answers the first
// result; the key sent with another body is refused (esproto.SameRequest).
func (a *App) Update(ctx context.Context, p principal.Caller, id string, in domain.Input) (*webhooksv1.Webhook, error) {
	idempotencyKey := p.CommandID
	return a.Webhooks.Update(ctx, p.WorkspaceID, id, idempotencyKey, func(w *webhooksv1.Webhook, meta *commonv1.EventMeta) (proto.Message, error) {
		spec, err := domain.ValidateUpdate(in, specOf(w), a.Sender.HostAllowed)
		if err != nil {
			return nil, err
		}
		var changed []string
		if spec.URL != w.GetUrl() {
			w.Url = spec.URL
			changed = append(changed, "url")
		}
		if !slices.Equal(spec.Events, w.GetEvents()) {
			w.Events = spec.Events
			changed = append(changed, "events")
		}
		if spec.Active != w.GetActive() {
			w.Active = spec.Active
			changed = append(changed, "active")
			if spec.Active {
				// Enabled again: delivering resumes, and the failures
				// that count toward an auto-disable are those from now.
				w.DisabledReason, w.DisabledAtUnix = "", nil
				w.EnabledAtUnixMs = a.Now().UnixMilli()
			}
		}
		if in.Active != nil && !*in.Active && !w.GetActive() && w.GetDisabledReason() != "" {
			// A user disables what the dispatcher had: theirs from now on
			// (is_disabled, no longer is_auto_disabled).
			w.DisabledReason = ""
			changed = append(changed, "active")
		}
		if spec.Name != w.GetName() {
			w.Name = spec.Name
			changed = append(changed, "name")
		}
		if !maps.Equal(spec.Headers, w.GetRequestHeaders()) {
			w.RequestHeaders = spec.Headers
			changed = append(changed, "request_headers")
		}
		if rc := retryConfigOf(spec.Retry); !proto.Equal(rc, w.GetRetryConfig()) {
			w.RetryConfig = rc
			changed = append(changed, "retry_config")
		}
		if spec.Secret != "" {
			sealed, err := a.Sealer.Seal(w.GetWebhookId(), spec.Secret)
			if err != nil {
				return nil, err
			}
			w.SecretSealed, w.SecretHint = sealed, domain.SecretHint(spec.Secret)
			changed = append(changed, "secret")
		}
		if len(changed) == 0 {
			return nil, nil
		}
		return &webhooksv1.WebhookUpdated{Meta: meta, Webhook: w, ChangedFields: changed}, nil
	})
}

// Delete removes a webhook; its pending deliveries are dropped. With an
// idempotency key a replay answers as the first did.
func (a *App) Delete(ctx context.Context, p principal.Caller, id string) error {
	idempotencyKey := p.CommandID
	_, err := a.Webhooks.Update(ctx, p.WorkspaceID, id, idempotencyKey, func(w *webhooksv1.Webhook, meta *commonv1.EventMeta) (proto.Message, error) {
		at := a.Now().Unix()
		w.DeletedAtUnix = &at
		w.Active = false
		return &webhooksv1.WebhookDeleted{Meta: meta, Webhook: w}, nil
	})
	return err
}

// DisableGone deactivates a webhook whose receiver answered code (410
// Gone): a WebhookDisabled event every replica sees, with the reason. One
// already inactive is left as it is.
func DisableGone(ctx context.Context, repo *aggregate.Repo[*webhooksv1.Webhook], w *webhooksv1.Webhook, code int32, at time.Time) error {
	_, err := repo.Update(ctx, w.GetWorkspaceId(), w.GetWebhookId(), "", func(next *webhooksv1.Webhook, meta *commonv1.EventMeta) (proto.Message, error) {
		if !next.GetActive() {
			return nil, nil
		}
		unix := at.Unix()
		next.Active, next.DisabledReason, next.DisabledAtUnix = false, domain.DisabledGone, &unix
		next.LastFailureCode, next.LastFailureAtUnixMs = code, at.UnixMilli()
		return &webhooksv1.WebhookDisabled{Meta: meta, Webhook: next, ResponseCode: code}, nil
	})
	return err
}
