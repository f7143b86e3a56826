// Package esproto joins the event log to the proto-events contracts:
// it appends typed events with their metadata and headers, and decodes
// records back into messages through the contract registry.
package esproto

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"

	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/ids"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/pkg/requestid"
	"github.com/voiceai-platform/voiceai/pkg/tracing"
)

// Meta builds the metadata of an event caused by the request in ctx.
func Meta(ctx context.Context, workspaceID, commandID string, now time.Time) *commonv1.EventMeta {
	p, _ := principal.From(ctx)
	meta := &commonv1.EventMeta{
		EventId:          ids.New("evt"),
		OccurredAtUnixMs: now.UnixMilli(),
		WorkspaceId:      workspaceID,
		ActorUserId:      p.UserID,
		CommandId:        commandID,
		RequestId:        requestid.From(ctx),
	}
	if commandID != "" {
		meta.RequestDigest = RequestDigest(ctx) // what a replay must match (replay.go)
	}
	return meta
}

// Encode is the event to append for ev: its contract type and schema, the
// metadata's ids, and the request's trace context.
func Encode(ctx context.Context, meta *commonv1.EventMeta, ev proto.Message) (eventlog.Event, error) {
	data, err := proto.Marshal(ev)
	if err != nil {
		return eventlog.Event{}, fmt.Errorf("encode %T: %w", ev, err)
	}
	var header eventlog.Header
	if tp := tracing.RequestTrace(ctx); tp != "" {
		header = eventlog.Header{events.HeaderTraceparent: []string{tp}}
	}
	return eventlog.Event{
		Header:        header,
		ID:            meta.GetEventId(),
		Type:          events.TypeOf(ev),
		Schema:        events.SchemaOf(ev),
		SchemaVersion: events.SchemaVersion,
		Workspace:     meta.GetWorkspaceId(),
		Data:          data,
	}, nil
}

// Append appends ev on subject with optimistic concurrency (expected =
// the subject's last sequence, 0 to create) and command-id dedup. A
// duplicate of another request under the same key is
// apperr.IdempotencyKeyReused (SameRequest).
func Append(ctx context.Context, st eventlog.Store, subject string, expected uint64, meta *commonv1.EventMeta, ev proto.Message) (eventlog.Appended, error) {
	e, err := Encode(ctx, meta, ev)
	if err != nil {
		return eventlog.Appended{}, err
	}
	res, err := st.Append(ctx, subject, expected, meta.GetCommandId(), e)
	if err == nil && res.Duplicate {
		err = SameRequestAt(ctx, st, res.Seq)
	}
	return res, err
}

// Decode turns a record into its contract message.
func Decode(rec eventlog.Record) (proto.Message, error) {
	msg, ok := events.New(rec.Type)
	if !ok {
		return nil, fmt.Errorf("unknown event type %q at seq %d", rec.Type, rec.Seq)
	}
	if err := proto.Unmarshal(rec.Data, msg); err != nil {
		return nil, fmt.Errorf("decode %s at seq %d: %w", rec.Type, rec.Seq, err)
	}
	return msg, nil
}

// At loads the event stored at seq.
func At(ctx context.Context, st eventlog.Store, seq uint64) (proto.Message, error) {
	rec, err := st.At(ctx, seq)
	if err != nil {
		return nil, err
	}
	return Decode(rec)
}

// Last loads the newest event of subject: with state-carrying events it is
// the aggregate's whole current state. found is false for a new subject.
func Last(ctx context.Context, st eventlog.Store, subject string) (msg proto.Message, seq uint64, found bool, err error) {
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
