package app

import (
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
)

// DeliveryID names one delivery of an event to a webhook (the first, or
// a resend): "dlv_" and a hash of event, webhook and resend ids, so it
// follows the id grammar whatever the event id looks like.
func DeliveryID(a *webhooksv1.DeliveryAttempt) string {
	return "dlv_" + esproto.StableID("delivery", a.GetEventId()+"\x00"+a.GetWebhookId()+"\x00"+a.GetResendId())
}
