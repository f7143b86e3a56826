package app

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"

	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/aggregate"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// RecordOutcome keeps a webhook's run of deliveries that failed for good
// after the attempt att ended one (a final attempt; a test delivery
// counts for nothing), as events every replica sees: a failure adds one
// to the run (and is the latest failure shown), and disables the webhook
// when rule trips (WebhookDisabled, reason "failing"): nothing more is
// queued for it until a user enables it again. A success ends the run.
// w is the webhook as the caller knows it: with no run known, a success
// writes nothing (the common case costs no write). It reports whether
// the webhook was disabled.
func RecordOutcome(ctx context.Context, repo *aggregate.Repo[*webhooksv1.Webhook], rule domain.AutoDisable, w *webhooksv1.Webhook, att *webhooksv1.DeliveryAttempt) (disabled bool, err error) {
	if att.GetTest() || !att.GetFinal() {
		return false, nil
	}
	if att.GetSuccess() {
		if w.GetConsecutiveFailures() == 0 {
			return false, nil
		}
		_, err := repo.Update(ctx, w.GetWorkspaceId(), w.GetWebhookId(), "", func(next *webhooksv1.Webhook, meta *commonv1.EventMeta) (proto.Message, error) {
			if next.GetConsecutiveFailures() == 0 {
				return nil, nil
			}
			next.ConsecutiveFailures, next.FailingSinceUnixMs = 0, 0
			return &webhooksv1.WebhookUpdated{Meta: meta, Webhook: next, ChangedFields: []string{"consecutive_failures"}}, nil
		})
		return false, err
	}
	at := time.UnixMilli(att.GetAtUnixMs())
	_, err = repo.Update(ctx, w.GetWorkspaceId(), w.GetWebhookId(), "", func(next *webhooksv1.Webhook, meta *commonv1.EventMeta) (proto.Message, error) {
		disabled = false // a retry against fresh state decides again
		if !next.GetActive() {
			return nil, nil // disabled meanwhile: its jobs are being dropped
		}
		if next.ConsecutiveFailures == 0 {
			next.FailingSinceUnixMs = att.GetAtUnixMs()
		}
		next.ConsecutiveFailures++
		next.LastFailureCode, next.LastFailureAtUnixMs = att.GetResponseCode(), att.GetAtUnixMs()
		if !rule.Trips(int(next.ConsecutiveFailures), time.UnixMilli(next.FailingSinceUnixMs), at) {
			return &webhooksv1.WebhookUpdated{Meta: meta, Webhook: next, ChangedFields: []string{"consecutive_failures"}}, nil
		}
		unix := at.Unix()
		next.Active, next.DisabledReason, next.DisabledAtUnix = false, domain.DisabledFailing, &unix
		disabled = true
		return &webhooksv1.WebhookDisabled{Meta: meta, Webhook: next, ResponseCode: att.GetResponseCode()}, nil
	})
	return disabled && err == nil, err
}
