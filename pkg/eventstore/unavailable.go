package eventstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
)

// unavailable wraps an error a retry may cure: the stream did not answer
// (no leader for a moment, during an election or a restart), or nothing
// answered in time. The edge answers it 503 with Retry-After, not 500.
type unavailable struct{ err error }

func (u unavailable) Error() string     { return u.err.Error() }
func (u unavailable) Unwrap() error     { return u.err }
func (u unavailable) Unavailable() bool { return true }

// clusterUnavailable are JetStream's answers for "not now": no leader or
// no quorum, a stream offline, a per-subject check not ready yet after a
// leader change (numbers from nats-server's generated error table).
var clusterUnavailable = map[jetstream.ErrorCode]bool{
	10005: true, // JSClusterNoPeersErrF
	10008: true, // JSClusterNotAvailErr
	10118: true, // JSStreamOfflineErr
	10163: true, // JSStreamExpectedLastSeqPerSubjectNotReady
	// A message with this id is still being stored: a retried command
	// racing its first attempt (publishSettled waits a little for it).
	duplicateInProcess: true,
}

// duplicateInProcess is JetStream's JSStreamDuplicateMessageConflict.
const duplicateInProcess jetstream.ErrorCode = 10158

// publishSettled publishes msg; while JetStream answers that a message
// with the same id is still being stored (a command retried, or sent
// twice by the gateway's hedging, while its first attempt is in flight),
// it asks again shortly, for up to about 0.6 s, so the retry is answered
// with the first attempt's acknowledgement (a duplicate) rather than an
// error.
func publishSettled(ctx context.Context, js jetstream.JetStream, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	wait := 10 * time.Millisecond
	for attempt := 0; ; attempt++ {
		ack, err := js.PublishMsg(ctx, msg, opts...)
		var apiErr *jetstream.APIError
		if err == nil || !errors.As(err, &apiErr) || apiErr.ErrorCode != duplicateInProcess || attempt == 6 {
			return ack, err
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, err
		}
		wait *= 2
	}
}

// insufficientResources is JetStream's JSInsufficientResourcesErr: the
// server's or account's storage limit (max_file_store) is reached.
const insufficientResources jetstream.ErrorCode = 10023

// Classify marks err unavailable when a retry may cure it, and as
// apperr.StorageFull when JetStream has no room left for it.
func Classify(err error) error {
	var apiErr *jetstream.APIError
	switch {
	case err == nil, eventlog.IsUnavailable(err):
		return err
	case errors.As(err, &apiErr) && apiErr.ErrorCode == insufficientResources:
		return fmt.Errorf("%w: %w", apperr.StorageFull, err)
	case errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, nats.ErrTimeout), errors.Is(err, nats.ErrNoResponders),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrConnectionReconnecting),
		errors.Is(err, nats.ErrDisconnected), // in flight when the connection broke or moved
		errors.As(err, &apiErr) && clusterUnavailable[apiErr.ErrorCode]:
		return unavailable{err}
	}
	return err
}

// Publish is js.PublishMsg whose failures a retry may cure (no stream
// leader for a moment, no answer in time) are marked so, for the edge to
// answer 503 with Retry-After rather than 500.
func Publish(ctx context.Context, js jetstream.JetStream, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	ack, err := publishSettled(ctx, js, msg, opts...)
	return ack, Classify(err)
}
