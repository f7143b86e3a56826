// Package eventstore is the event store on JetStream, the eventlog port's
// adapter: one stream per bounded context, one subject per aggregate.
// Appends are guarded by the subject's last sequence (optimistic
// concurrency) and deduplicated by command id (Nats-Msg-Id); an
// aggregate's history is its subject's messages. It also holds what only
// JetStream's users need: stream setup, following, direct gets.
package eventstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/ids"
)

// The port's names the JetStream-side code uses, named here too.
type (
	Event  = eventlog.Event
	Record = eventlog.Record
)

// AnySeq is eventlog.AnySeq.
const AnySeq = eventlog.AnySeq

// StreamConfig describes a bounded context's stream.
type StreamConfig struct {
	Name     string
	Subjects []string
	Replicas int
	// MaxAge bounds retention; 0 keeps events forever (the event store).
	MaxAge time.Duration
	// DedupWindow is how long a command id is remembered; default 10m.
	DedupWindow time.Duration
}

// EnsureEventStreams ensures the named streams of the suite's table
// (events.Streams), with its subjects and duplicate window, as
// EnsureStream does. Every process that ensures a stream this way asks
// for the same settings, so none undoes another's.
func EnsureEventStreams(ctx context.Context, js jetstream.JetStream, replicas int, names ...string) error {
	for _, name := range names {
		if _, err := EnsureEventStream(ctx, js, replicas, name, 0); err != nil {
			return err
		}
	}
	return nil
}

// EnsureEventStream ensures one stream of the suite's table, keeping its
// messages maxAge (0: as found, or for ever when it makes the stream).
func EnsureEventStream(ctx context.Context, js jetstream.JetStream, replicas int, name string, maxAge time.Duration) (jetstream.Stream, error) {
	specs := events.Streams()
	i := slices.IndexFunc(specs, func(s events.StreamSpec) bool { return s.Name == name })
	if i < 0 {
		return nil, fmt.Errorf("stream %s: not one of the suite's streams", name)
	}
	s, err := EnsureStream(ctx, js, StreamConfig{Name: name, Subjects: specs[i].Subjects, Replicas: replicas,
		DedupWindow: specs[i].DedupWindow, MaxAge: maxAge})
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", name, err)
	}
	return s, nil
}

// EnsureStream creates or updates the stream: file storage, no deletes or
// purges (events are facts), and new appends refused rather than old
// events discarded when a limit is reached.
func EnsureStream(ctx context.Context, js jetstream.JetStream, c StreamConfig) (jetstream.Stream, error) {
	if c.Replicas < 1 {
		c.Replicas = 1
	}
	if c.DedupWindow == 0 {
		c.DedupWindow = 10 * time.Minute
	}
	return EnsureConfig(ctx, js, jetstream.StreamConfig{
		Name:        c.Name,
		Subjects:    c.Subjects,
		Storage:     jetstream.FileStorage,
		Replicas:    c.Replicas,
		MaxAge:      c.MaxAge,
		Discard:     jetstream.DiscardNew,
		DenyDelete:  true,
		DenyPurge:   true,
		Duplicates:  c.DedupWindow,
		AllowDirect: true,
		// A command over several aggregates is stored whole or not at
		// all (Store.AppendAll).
		AllowAtomicPublish: true,
	})
}

// Store is the eventlog port on one JetStream stream.
type Store struct {
	js     jetstream.JetStream
	stream string
}

// New returns a store over an existing stream.
func New(js jetstream.JetStream, stream string) *Store { return &Store{js: js, stream: stream} }

var _ eventlog.Store = (*Store)(nil)

// Stream is the stream's name.
func (s *Store) Stream() string { return s.stream }

// NewMsg builds the message Append publishes: the event's headers, and
// Nats-Msg-Id set to commandID (or the event id) for deduplication. For
// publishers that pipeline appends without expectations (PublishMsgAsync).
func NewMsg(subject, commandID string, ev Event) *nats.Msg {
	if ev.ID == "" {
		ev.ID = ids.New("evt")
	}
	msg := nats.NewMsg(subject)
	for k, v := range ev.Header {
		msg.Header[k] = v
	}
	msgID := commandID
	if msgID == "" {
		msgID = ev.ID
	}
	msg.Header.Set(events.HeaderEventID, ev.ID)
	msg.Header.Set(events.HeaderEventType, ev.Type)
	msg.Header.Set(events.HeaderSchema, ev.Schema)
	msg.Header.Set(events.HeaderSchemaVersion, ev.SchemaVersion)
	msg.Header.Set(events.HeaderWorkspaceID, ev.Workspace)
	msg.Header.Set(jetstream.MsgIDHeader, msgID)
	msg.Data = ev.Data
	return msg
}

// Append writes ev to subject if the subject's last sequence is still
// expectedSeq (0: the subject must be empty). A non-empty commandID makes
// the append idempotent: a retry answers the first append's sequence.
func (s *Store) Append(ctx context.Context, subject string, expectedSeq uint64, commandID string, ev Event) (eventlog.Appended, error) {
	msg := NewMsg(subject, commandID, ev)
	opts := []jetstream.PublishOpt{jetstream.WithExpectStream(s.stream)}
	if expectedSeq != AnySeq {
		opts = append(opts, jetstream.WithExpectLastSequencePerSubject(expectedSeq))
	}
	ack, err := publishSettled(ctx, s.js, msg, opts...)
	if err != nil {
		if IsConflict(err) {
			// JetStream checks the expected sequence before the message id,
			// so a retried command meets a conflict: if the command is
			// already on the subject, answer as a duplicate.
			if commandID != "" {
				if rec, found, ferr := s.FindCommand(ctx, subject, commandID); ferr == nil && found {
					return eventlog.Appended{Seq: rec.Seq, Duplicate: true}, nil
				}
			}
			return eventlog.Appended{}, fmt.Errorf("%w: %s at %d", eventlog.ErrConflict, subject, expectedSeq)
		}
		return eventlog.Appended{}, fmt.Errorf("append to %s: %w", subject, Classify(err))
	}
	return eventlog.Appended{Seq: ack.Sequence, Duplicate: ack.Duplicate}, nil
}

// IsConflict reports whether err is JetStream refusing an append because
// the subject's last sequence differs, judged by error code alone.
func IsConflict(err error) bool {
	if errors.Is(err, eventlog.ErrConflict) {
		return true
	}
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

// FindCommand implements eventlog.Store: newest first, one read when it is
// the last event. It does not depend on the stream's duplicate window,
// which forgets a command id after DedupWindow.
func (s *Store) FindCommand(ctx context.Context, subject, commandID string) (Record, bool, error) {
	return eventlog.FindCommand(ctx, s, subject, commandID)
}
