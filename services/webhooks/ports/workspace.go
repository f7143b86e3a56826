package ports

import (
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// The workspace webhooks API, /v1/workspace/webhooks, in the shapes of
// the official SDK's client.webhooks (list, create, update, delete): the
// same webhooks as /v1/convai/webhooks, seen another way. Its bodies'
// shapes are the schemas' (WorkspaceWebhookCreate, WorkspaceWebhookUpdate),
// checked at the edge.

// workspaceWebhook is WorkspaceWebhookResponseModel.
type workspaceWebhook struct {
	Name                       string   `json:"name"`
	WebhookID                  string   `json:"webhook_id"`
	WebhookURL                 string   `json:"webhook_url"`
	IsDisabled                 bool     `json:"is_disabled"`
	IsAutoDisabled             bool     `json:"is_auto_disabled"`
	CreatedAtUnix              int64    `json:"created_at_unix"`
	AuthType                   string   `json:"auth_type"`
	Usage                      []usage  `json:"usage,omitempty"`
	Events                     []string `json:"events"`
	MostRecentFailureErrorCode *int32   `json:"most_recent_failure_error_code,omitempty"`
	MostRecentFailureTimestamp *int64   `json:"most_recent_failure_timestamp,omitempty"`
}

type usage struct {
	UsageType string `json:"usage_type"`
}

// usageTypes are the SDK's WebhookUsageType of each workspace-level event
// type.
var usageTypes = map[string]string{"agent_qa": "Agent QA Evaluations"}

func workspaceViewOf(w *webhooksv1.Webhook, usages bool, run domain.Run) workspaceWebhook {
	v := workspaceWebhook{
		Name: w.GetName(), WebhookID: w.GetWebhookId(), WebhookURL: w.GetUrl(),
		// A user's disabling is is_disabled; the dispatcher's is
		// is_auto_disabled (one or the other).
		IsDisabled: !w.GetActive() && !autoDisabled(w), IsAutoDisabled: autoDisabled(w),
		CreatedAtUnix: w.GetCreatedAtUnix(), AuthType: "hmac", Events: domain.WorkspaceEventsOf(w.GetEvents()),
	}
	if usages {
		v.Usage = []usage{}
		for _, e := range v.Events {
			v.Usage = append(v.Usage, usage{UsageType: usageTypes[e]})
		}
	}
	v.MostRecentFailureErrorCode, v.MostRecentFailureTimestamp = lastFailure(w, run)
	return v
}

func (h *Handlers) WorkspaceList(c *api.Call) (any, error) {
	var q struct {
		IncludeUsages bool `json:"include_usages"`
	}
	if err := c.Query(&q); err != nil {
		return nil, err
	}
	hooks := h.App.List(c.Caller().WorkspaceID)
	out := struct {
		Webhooks []workspaceWebhook `json:"webhooks"`
	}{Webhooks: make([]workspaceWebhook, 0, len(hooks))}
	for _, wh := range hooks {
		out.Webhooks = append(out.Webhooks, workspaceViewOf(wh, q.IncludeUsages, h.App.RunOf(wh)))
	}
	return out, nil
}

// WorkspaceCreate makes a webhook subscribed to agent_qa (the one
// workspace-level event type produced here; update's events changes
// that) with a generated secret, shown in this answer only.
func (h *Handlers) WorkspaceCreate(c *api.Call) (any, error) {
	var in struct {
		Settings struct {
			Name           *string            `json:"name"`
			WebhookURL     *string            `json:"webhook_url"`
			RequestHeaders map[string]*string `json:"request_headers"`
		} `json:"settings"`
	}
	if err := c.Body(&in); err != nil {
		return nil, err
	}
	s := in.Settings
	wh, secret, err := h.App.Create(c.Context(), c.Caller(), domain.Input{
		URL: s.WebhookURL, Name: s.Name, RequestHeaders: s.RequestHeaders,
		Events: []string{}, WorkspaceEvents: []string{"agent_qa"}, Within: []any{"settings"}, URLField: "webhook_url",
	})
	if err != nil {
		return nil, err
	}
	return map[string]string{"webhook_id": wh.GetWebhookId(), "webhook_secret": secret}, nil
}

func (h *Handlers) WorkspaceUpdate(c *api.Call) (any, error) {
	var in struct {
		IsDisabled     *bool              `json:"is_disabled"`
		Name           *string            `json:"name"`
		RetryEnabled   *bool              `json:"retry_enabled"`
		RequestHeaders map[string]*string `json:"request_headers"`
		Events         []string           `json:"events"`
	}
	if err := c.Body(&in); err != nil {
		return nil, err
	}
	upd := domain.Input{Name: in.Name, RetryEnabled: in.RetryEnabled, RequestHeaders: in.RequestHeaders, WorkspaceEvents: in.Events}
	if in.IsDisabled != nil {
		active := !*in.IsDisabled
		upd.Active = &active
	}
	if _, err := h.App.Update(c.Context(), c.Caller(), c.ID(), upd); err != nil {
		return nil, err
	}
	return map[string]string{"status": "ok"}, nil
}

func (h *Handlers) WorkspaceDelete(c *api.Call) (any, error) {
	if err := h.App.Delete(c.Context(), c.Caller(), c.ID()); err != nil {
		return nil, err
	}
	return map[string]string{"status": "ok"}, nil
}
