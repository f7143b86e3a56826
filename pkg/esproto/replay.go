package esproto

import (
	"context"

	events "github.com/voiceai-platform/voiceai/proto-events"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
)

// An Idempotency-Key names one request, as Stripe's does: a command id
// (the key made unique to its workspace and operation) is a replay only
// of the request that first used it. The edge puts the keyed request's
// fingerprint in its context (WithRequestDigest), Meta stamps it on every
// event the command records (request_digest), and whatever answers a
// replay with what the command first recorded asks SameRequest first. A
// key sent again with another body, or to another resource of the same
// operation, is then refused rather than answered with the first
// request's result, which would tell the caller its second request was
// done when nothing of it was.

type digestKey struct{}

// WithRequestDigest returns ctx carrying the fingerprint of the keyed
// request being served.
func WithRequestDigest(ctx context.Context, digest string) context.Context {
	return context.WithValue(ctx, digestKey{}, digest)
}

// RequestDigest is the fingerprint ctx carries, or "".
func RequestDigest(ctx context.Context) string {
	d, _ := ctx.Value(digestKey{}).(string)
	return d
}

// SameRequest says whether the request in ctx may be answered with what
// its command id first recorded, first being that event's metadata: nil
// when it is the same request, or when either side has no fingerprint
// (an event recorded before fingerprints, a command issued by no
// request); apperr.IdempotencyKeyReused when the key went with another.
func SameRequest(ctx context.Context, first *commonv1.EventMeta) error {
	return SameDigest(ctx, first.GetRequestDigest())
}

// SameDigest is SameRequest for first, the fingerprint a command's first
// request left where no EventMeta holds it.
func SameDigest(ctx context.Context, first string) error {
	if got := RequestDigest(ctx); first == "" || got == "" || first == got {
		return nil
	}
	return apperr.IdempotencyKeyReused
}

// SameRequestAt is SameRequest for the event stored at seq: what a
// store's duplicate answer points at.
func SameRequestAt(ctx context.Context, st eventlog.Store, seq uint64) error {
	if RequestDigest(ctx) == "" {
		return nil // nothing to compare: no read
	}
	rec, err := st.At(ctx, seq)
	if err != nil {
		return err
	}
	return SameRequestIn(ctx, rec)
}

// SameRequestIn is SameRequest for the event rec holds, decoded only when
// ctx has a fingerprint to compare.
func SameRequestIn(ctx context.Context, rec eventlog.Record) error {
	if RequestDigest(ctx) == "" {
		return nil
	}
	msg, err := Decode(rec)
	if err != nil {
		return err
	}
	return SameRequest(ctx, events.MetaOf(msg))
}
