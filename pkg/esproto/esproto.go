// Package esproto joins the event store to the proto-events contracts:
// it appends typed events with their metadata and headers, and decodes
// records back into messages through the contract registry.
package esproto

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"

	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/pkg/ids"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/pkg/tracing"
)

// Meta builds the metadata of an event caused by the request in ctx.
func Meta(ctx context.Context, workspaceID, commandID string, now time.Time) *commonv1.EventMeta {
	p, _ := principal.From(ctx)
	return &commonv1.EventMeta{
		EventId:          ids.New("evt"),
		OccurredAtUnixMs: now.UnixMilli(),
		WorkspaceId:      workspaceID,
		ActorUserId:      p.UserID,
		CommandId:        commandID,
		RequestId:        httpx.RequestID(ctx),
	}
}

// Append publishes ev on subject with optimistic concurrency (expected =
// the subject's last sequence, 0 to create) and command-id dedup.
func Append(ctx context.Context, st *eventstore.Store, subject string, expected uint64, meta *commonv1.EventMeta, ev proto.Message) (eventstore.Appended, error) {
	data, err := proto.Marshal(ev)
	if err != nil {
		return eventstore.Appended{}, fmt.Errorf("encode %T: %w", ev, err)
	}
	var header nats.Header
	if tp := tracing.RequestTrace(ctx); tp != "" {
		header = nats.Header{events.HeaderTraceparent: []string{tp}}
	}
	return st.Append(ctx, subject, expected, meta.GetCommandId(), eventstore.Event{
		Header:        header,
		ID:            meta.GetEventId(),
		Type:          events.TypeOf(ev),
		Schema:        events.SchemaOf(ev),
		SchemaVersion: events.SchemaVersion,
		Workspace:     meta.GetWorkspaceId(),
		Data:          data,
	})
}

// NewMsg builds the message Append would publish, for pipelined
// publishing (no expected sequence; the command id deduplicates).
func NewMsg(ctx context.Context, subject string, meta *commonv1.EventMeta, ev proto.Message) (*nats.Msg, error) {
	data, err := proto.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", ev, err)
	}
	var header nats.Header
	if tp := tracing.RequestTrace(ctx); tp != "" {
		header = nats.Header{events.HeaderTraceparent: []string{tp}}
	}
	return eventstore.NewMsg(subject, meta.GetCommandId(), eventstore.Event{
		Header: header, ID: meta.GetEventId(), Type: events.TypeOf(ev), Schema: events.SchemaOf(ev),
		SchemaVersion: events.SchemaVersion, Workspace: meta.GetWorkspaceId(), Data: data,
	}), nil
}

// Decode turns a record into its contract message.
func Decode(rec eventstore.Record) (proto.Message, error) {
	msg, ok := events.New(rec.Type)
	if !ok {
		return nil, fmt.Errorf("unknown event type %q at seq %d", rec.Type, rec.Seq)
	}
	if err := proto.Unmarshal(rec.Data, msg); err != nil {
		return nil, fmt.Errorf("decode %s at seq %d: %w", rec.Type, rec.Seq, err)
	}
	return msg, nil
}

// DecodeMsg turns a consumed message into its contract message.
func DecodeMsg(m jetstream.Msg) (proto.Message, error) {
	rec, err := eventstore.RecordFromMsg(m)
	if err != nil {
		return nil, err
	}
	return Decode(rec)
}

// At loads the event stored at seq.
func At(ctx context.Context, st *eventstore.Store, seq uint64) (proto.Message, error) {
	rec, err := st.At(ctx, seq)
	if err != nil {
		return nil, err
	}
	return Decode(rec)
}

// Last loads the newest event of subject: with state-carrying events it is
// the aggregate's whole current state. found is false for a new subject.
func Last(ctx context.Context, st *eventstore.Store, subject string) (msg proto.Message, seq uint64, found bool, err error) {
	rec, found, err := st.Last(ctx, subject)
	if err != nil || !found {
		return nil, 0, found, err
	}
	msg, err = Decode(rec)
	return msg, rec.Seq, true, err
}

// StableID derives an aggregate id from a command id, so a retried create
// lands on the same subject and JetStream deduplicates it.
func StableID(scope, commandID string) string {
	h := sha256.Sum256([]byte(scope + "|" + commandID))
	return hex.EncodeToString(h[:13])
}

// FollowState keeps in-memory state from stream's state-carrying events
// matching filters: each subject's last event, then new ones live, each
// decoded and handed to apply with its sequence (an undecodable one is
// logged and skipped). It returns once the replay is applied.
func FollowState(ctx context.Context, js jetstream.JetStream, stream string, filters []string, log *slog.Logger, apply func(seq uint64, msg proto.Message)) error {
	f, err := eventstore.Follow(ctx, js, stream, filters, true, func(rec eventstore.Record) {
		msg, err := Decode(rec)
		if err != nil {
			log.Warn("event not decoded", "stream", stream, "subject", rec.Subject, "err", err)
			return
		}
		apply(rec.Seq, msg)
	})
	if err != nil {
		return err
	}
	return f.Wait(ctx)
}
