package eventstore

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
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
}

// classify marks err unavailable when a retry may cure it.
func classify(err error) error {
	var apiErr *jetstream.APIError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, nats.ErrTimeout), errors.Is(err, nats.ErrNoResponders),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrConnectionReconnecting),
		errors.As(err, &apiErr) && clusterUnavailable[apiErr.ErrorCode]:
		return unavailable{err}
	}
	return err
}

// Publish is js.PublishMsg whose failures a retry may cure (no stream
// leader for a moment, no answer in time) are marked so, for the edge to
// answer 503 with Retry-After rather than 500.
func Publish(ctx context.Context, js jetstream.JetStream, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	ack, err := js.PublishMsg(ctx, msg, opts...)
	return ack, classify(err)
}
