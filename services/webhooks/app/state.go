package app

import (
	"cmp"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
)

// DeliveryID names one delivery of an event to a webhook (the first, or
// a resend): "dlv_" and a hash of event, webhook and resend ids, so it
// follows the id grammar whatever the event id looks like.
func DeliveryID(a *webhooksv1.DeliveryAttempt) string {
	return "dlv_" + esproto.StableID("delivery", a.GetEventId()+"\x00"+a.GetWebhookId()+"\x00"+a.GetResendId())
}

// HoldsBodyOf reports whether a is an attempt of the delivery deliveryID
// that carries its request body (NewAttempt: its first or final one).
func HoldsBodyOf(a *webhooksv1.DeliveryAttempt, deliveryID string) bool {
	return len(a.GetRequestBody()) > 0 && DeliveryID(a) == deliveryID
}

// FirstOf reports whether a is what a log answers as the first attempt
// of delivery deliveryID before found (nil: none found yet): its first
// attempt, else its earliest recorded with the body (HoldsBodyOf).
func FirstOf(a *webhooksv1.DeliveryAttempt, deliveryID string, found *webhooksv1.DeliveryAttempt) bool {
	if DeliveryID(a) != deliveryID || a.GetRetryCount() > 0 && len(a.GetRequestBody()) == 0 {
		return false
	}
	return found == nil || a.GetRetryCount() < found.GetRetryCount()
}

// JobID is a delivery job's id, by which a Queue keeps it once: event,
// webhook and, for a resend, resend id.
func JobID(job *webhooksv1.DeliveryJob) string {
	id := job.GetEventId() + ":" + job.GetWebhookId()
	if job.GetResendId() != "" {
		id += ":" + job.GetResendId()
	}
	return id
}

// NewestFirst orders attempts as the delivery log lists them: newest
// first, attempts of the same millisecond by attempt id, descending.
func NewestFirst(a, b *webhooksv1.DeliveryAttempt) int {
	return cmp.Or(cmp.Compare(b.GetAtUnixMs(), a.GetAtUnixMs()), cmp.Compare(b.GetAttemptId(), a.GetAttemptId()))
}

// LogPosition is where an attempt stands in a delivery log, newest first
// (NewestFirst): by time, then by attempt id.
type LogPosition struct {
	AtMs      int64  `json:"at"`
	AttemptID string `json:"id"`
}

// PositionOf is where a stands.
func PositionOf(a *webhooksv1.DeliveryAttempt) LogPosition {
	return LogPosition{AtMs: a.GetAtUnixMs(), AttemptID: a.GetAttemptId()}
}

// Below reports whether a stands below p (after it, newest first). A
// position without an attempt id stands above every attempt of its
// millisecond: below it is what was made before.
func (p LogPosition) Below(a *webhooksv1.DeliveryAttempt) bool {
	return a.GetAtUnixMs() < p.AtMs || a.GetAtUnixMs() == p.AtMs && a.GetAttemptId() < p.AttemptID
}
