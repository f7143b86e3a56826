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

// EnabledAt is when w was last enabled (created, or set active again):
// its run of failures counts from then.
func EnabledAt(w *webhooksv1.Webhook) time.Time {
	return time.UnixMilli(max(w.GetEnabledAtUnixMs(), w.GetCreatedAtUnixMs()))
}

// RunOf is w's run of deliveries that failed for good, and its latest
// failure, as the delivery log knows them.
func (a *App) RunOf(w *webhooksv1.Webhook) domain.Run {
	return a.Attempts.Run(w.GetWebhookId(), EnabledAt(w))
}

// AutoDisabler applies the auto-disable rule to the attempts of every
// replica, as a dispatcher sees them: a webhook whose run of deliveries
// that failed for good trips Rule is disabled, by a WebhookDisabled event
// (reason "failing") every replica sees, so nothing more is queued for
// it until a user enables it again. Counting writes nothing: the attempt
// records are the facts it counts.
type AutoDisabler struct {
	Repo     *aggregate.Repo[*webhooksv1.Webhook]
	Registry interface {
		Get(workspaceID, id string) (*webhooksv1.Webhook, bool)
	}
	Runs FailureRuns
	Rule domain.AutoDisable
}

// Observe takes an attempt record and reports whether it disabled its
// webhook.
func (d *AutoDisabler) Observe(ctx context.Context, att *webhooksv1.DeliveryAttempt) (bool, error) {
	d.Runs.Observe(att)
	if att.GetSuccess() || !att.GetFinal() || att.GetTest() {
		return false, nil
	}
	w, ok := d.Registry.Get(att.GetWorkspaceId(), att.GetWebhookId())
	if !ok || !w.GetActive() || !d.Rule.Trips(d.Runs.Run(w.GetWebhookId(), EnabledAt(w))) {
		return false, nil
	}
	disabled := false
	_, err := d.Repo.Update(ctx, w.GetWorkspaceId(), w.GetWebhookId(), "", func(next *webhooksv1.Webhook, meta *commonv1.EventMeta) (proto.Message, error) {
		// Decided on the stored state: another replica may have disabled
		// it, or a user enabled it again, meanwhile.
		run := d.Runs.Run(next.GetWebhookId(), EnabledAt(next))
		if disabled = next.GetActive() && d.Rule.Trips(run); !disabled {
			return nil, nil
		}
		unix := run.Latest.Unix()
		next.Active, next.DisabledReason, next.DisabledAtUnix = false, domain.DisabledFailing, &unix
		next.LastFailureCode, next.LastFailureAtUnixMs = run.LastCode, run.LastAt.UnixMilli()
		return &webhooksv1.WebhookDisabled{Meta: meta, Webhook: next, ResponseCode: run.LastCode}, nil
	})
	return disabled && err == nil, err
}
