package adapters

import (
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/projection"
)

// webhookDoc is a webhook in the Mongo read model (for operators and
// reporting; the API serves from the in-memory registry). The sealed
// secret stays on the stream only.
type webhookDoc struct {
	WebhookID      string   `bson:"webhook_id"`
	WorkspaceID    string   `bson:"workspace_id"`
	URL            string   `bson:"url"`
	Events         []string `bson:"events"`
	Active         bool     `bson:"active"`
	DisabledReason string   `bson:"disabled_reason,omitempty"`
	MaxRetries     int32    `bson:"max_retries"`
	CreatedAtUnix  int64    `bson:"created_at_unix"`
	UpdatedAtUnix  int64    `bson:"updated_at_unix"`
	DeletedAtUnix  *int64   `bson:"deleted_at_unix,omitempty"`
}

// ProjectWebhook maps a WEBHOOKS record to its read-model document. An
// undecodable record is retried, as in every projection, rather than
// leave a webhook's document behind its stream.
var ProjectWebhook = projection.States(func(w *webhooksv1.Webhook) (string, any) {
	return w.GetWebhookId(), webhookDoc{
		WebhookID: w.GetWebhookId(), WorkspaceID: w.GetWorkspaceId(), URL: w.GetUrl(), Events: w.GetEvents(),
		Active: w.GetActive(), DisabledReason: w.GetDisabledReason(), MaxRetries: w.GetRetryConfig().GetMaxRetries(),
		CreatedAtUnix: w.GetCreatedAtUnix(), UpdatedAtUnix: w.GetUpdatedAtUnix(), DeletedAtUnix: w.DeletedAtUnix,
	}
})
