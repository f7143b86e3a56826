package eventstore

import (
	"context"
	"log/slog"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
)

// NewEventMsg builds the message an append of ev would publish, for
// pipelined publishing (no expected sequence; the command id
// deduplicates).
func NewEventMsg(ctx context.Context, subject string, meta *commonv1.EventMeta, ev proto.Message) (*nats.Msg, error) {
	e, err := esproto.Encode(ctx, meta, ev)
	if err != nil {
		return nil, err
	}
	return NewMsg(subject, meta.GetCommandId(), e), nil
}

// DecodeMsg turns a consumed message into its contract message.
func DecodeMsg(m jetstream.Msg) (proto.Message, error) {
	rec, err := RecordFromMsg(m)
	if err != nil {
		return nil, err
	}
	return esproto.Decode(rec)
}

// FollowState keeps in-memory state from stream's state-carrying events
// matching filters: each subject's last event, then new ones live, each
// decoded and handed to apply with its sequence (an undecodable one is
// logged and skipped). It returns once the replay is applied.
//
// reset (nil: none) empties that state when the stream is found made
// anew (a restore), before the new stream is applied from its start: the
// state keeps each aggregate's sequence to refuse older events, and the
// new stream numbers from 1 again, so without it the state would keep
// what the new stream lacks and refuse what it changes.
func FollowState(ctx context.Context, js jetstream.JetStream, stream string, filters []string, log *slog.Logger, apply func(seq uint64, msg proto.Message), reset func()) error {
	return FollowRecordsExcept(ctx, js, stream, filters, log, nil, func(rec Record) {
		if msg, ok := DecodeOrWarn(log, stream, rec); ok {
			apply(rec.Seq, msg)
		}
	}, reset)
}

// DecodeOrWarn decodes rec, or warns that a record of stream was not
// decoded (a follower passes it over).
func DecodeOrWarn(log *slog.Logger, stream string, rec Record) (proto.Message, bool) {
	msg, err := esproto.Decode(rec)
	if err != nil {
		WarnNotDecoded(log, stream, rec, err)
		return nil, false
	}
	return msg, true
}

// WarnNotDecoded warns that a record of stream was not decoded, for err.
func WarnNotDecoded(log *slog.Logger, stream string, rec Record, err error) {
	log.Warn("event not decoded", "stream", stream, "subject", rec.Subject, "err", err)
}

// FollowRecordsExcept is FollowState handing apply each record still
// encoded, for state that reads some events without decoding them whole
// (events.StateBytes), and passing over a record the state already holds
// (known: its subject's state is as of seq or later), such as the
// stream's copy of the replica's own write, applied inline after its
// append. known nil passes over none.
func FollowRecordsExcept(ctx context.Context, js jetstream.JetStream, stream string, filters []string, log *slog.Logger, known func(subject string, seq uint64) bool, apply func(Record), reset func()) error {
	f, err := Follow(ctx, js, stream, filters, true, func(rec Record) {
		if known != nil && known(rec.Subject, rec.Seq) {
			return
		}
		apply(rec)
	})
	if err != nil {
		return err
	}
	if reset != nil {
		f.WhenMadeAnew(func() {
			log.Warn("stream made anew: what was read of it is dropped and read again from its start", "stream", stream)
			reset()
		})
	}
	return f.Wait(ctx)
}
