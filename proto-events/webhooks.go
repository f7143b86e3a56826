package events

// Streams and subjects of the webhooks service.
const (
	// WebhooksStream holds the webhook aggregates' events (state-carrying):
	// webhooks.evt.<workspace_id>.<webhook_id>.
	WebhooksStream        = "WEBHOOKS"
	WebhooksSubjectPrefix = "webhooks.evt"
	WebhooksAll           = "webhooks.evt.>"

	// WebhookDeliveriesStream is the work queue of delivery jobs (one per
	// event x webhook, WorkQueue retention, removed when delivered or given
	// up): webhooks.delivery.<workspace_id>.<webhook_id>.
	WebhookDeliveriesStream        = "WEBHOOK_DELIVERIES"
	WebhookDeliveriesSubjectPrefix = "webhooks.delivery"
	WebhookDeliveriesAll           = "webhooks.delivery.>"
	// A job waiting for its workspace's turn is a message schedule on the
	// same stream, webhooks.deferred.<workspace_id>.<webhook_id>.<job>,
	// that puts it back on its delivery subject when its time comes
	// (headers HeaderAttemptsMade and HeaderDeferrals).
	WebhookDeferredSubjectPrefix = "webhooks.deferred"
	WebhookDeferredAll           = "webhooks.deferred.>"

	// WebhookAttemptsStream records every delivery attempt (limits
	// retention: the newest attempts of each webhook):
	// webhooks.attempt.<workspace_id>.<webhook_id>.
	WebhookAttemptsStream        = "WEBHOOK_ATTEMPTS"
	WebhookAttemptsSubjectPrefix = "webhooks.attempt"
	WebhookAttemptsAll           = "webhooks.attempt.>"

	// WebhookAttemptsLogStream is the work queue the durable delivery log
	// is copied from: every attempt record is published here too, on
	// webhooks.attemptlog.<workspace_id>.<webhook_id>, and leaves once the
	// log holds it. The copy may fall behind by any amount (down, or
	// slower than a burst) and lose nothing. (It sourced WEBHOOK_ATTEMPTS
	// before: a sourcing paused by a leader election fell behind the
	// 1,000 attempts that stream keeps of a webhook, and lost the rest.
	// Records sourced then keep their webhooks.attempt subjects.)
	WebhookAttemptsLogStream        = "WEBHOOK_ATTEMPTS_LOG"
	WebhookAttemptsLogSubjectPrefix = "webhooks.attemptlog"
	WebhookAttemptsLogAll           = "webhooks.attemptlog.>"
)

// Event types of stream WEBHOOKS.
const (
	TypeWebhookCreated  = "webhooks.webhook_created"
	TypeWebhookUpdated  = "webhooks.webhook_updated"
	TypeWebhookDeleted  = "webhooks.webhook_deleted"
	TypeWebhookDisabled = "webhooks.webhook_disabled"
)

// WebhookSubject is the subject of webhook webhookID's events:
// webhooks.evt.<workspaceID>.<webhookID>.
func WebhookSubject(workspaceID, webhookID string) (string, error) {
	return webhookScoped(WebhooksSubjectPrefix, workspaceID, webhookID)
}

// WebhookDeliverySubject is the subject of a delivery job for webhookID.
func WebhookDeliverySubject(workspaceID, webhookID string) (string, error) {
	return webhookScoped(WebhookDeliveriesSubjectPrefix, workspaceID, webhookID)
}

// WebhookDeferredSubject is the subject of the schedule that puts job
// (a token naming one job of webhookID) back in the queue.
func WebhookDeferredSubject(workspaceID, webhookID, job string) (string, error) {
	if err := checkIDs("workspace id", workspaceID, "webhook id", webhookID, "job", job); err != nil {
		return "", err
	}
	return WebhookDeferredSubjectPrefix + "." + workspaceID + "." + webhookID + "." + job, nil
}

// WebhookRelaySubjectPrefix starts the core NATS subjects (no stream) on
// which the dispatcher hands a relay webhook's delivery to the client
// polling for it: a request, answered with the client's outcome.
const WebhookRelaySubjectPrefix = "webhooks.relay"

// WebhookRelaySubject is the relay subject of webhookID.
func WebhookRelaySubject(workspaceID, webhookID string) (string, error) {
	return webhookScoped(WebhookRelaySubjectPrefix, workspaceID, webhookID)
}

// WebhookAttemptSubject is the subject of webhookID's attempt records.
func WebhookAttemptSubject(workspaceID, webhookID string) (string, error) {
	return webhookScoped(WebhookAttemptsSubjectPrefix, workspaceID, webhookID)
}

// WebhookAttemptLogSubject is the subject of webhookID's attempt records
// on the durable log's work queue.
func WebhookAttemptLogSubject(workspaceID, webhookID string) (string, error) {
	return webhookScoped(WebhookAttemptsLogSubjectPrefix, workspaceID, webhookID)
}

// webhookScoped is <prefix>.<workspaceID>.<webhookID>, with both ids
// checked.
func webhookScoped(prefix, workspaceID, webhookID string) (string, error) {
	if err := checkIDs("workspace id", workspaceID, "webhook id", webhookID); err != nil {
		return "", err
	}
	return prefix + "." + workspaceID + "." + webhookID, nil
}
