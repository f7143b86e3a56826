package adapters

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.mongodb.org/mongo-driver/v2/bson"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/projection"
	"github.com/voiceai-platform/voiceai/pkg/wire"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// ConversationDeletedEvent records on PLATFORM that a conversation was
// deleted (convseal.DeletedEvent): every replica's index, every
// projection and every replay learns the deletion there, in order with
// the conversation's own events.
const ConversationDeletedEvent = convseal.DeletedEvent

// ConversationDeletedFilter matches those records of every workspace.
const ConversationDeletedFilter = convseal.DeletedFilter

// ConversationFeed is what the conversations' read models follow on
// PLATFORM: the conversations' events and their deletions.
var ConversationFeed = append(append([]string{}, events.PlatformConversationFilters...), ConversationDeletedFilter)

// forget drops a conversation from the index for good, out of every tree
// it is in; x.mu is held.
func (x *ConversationIndex) forget(workspaceID, conversationID string) {
	key := workspaceID + "/" + conversationID
	if x.erased == nil {
		x.erased = map[string]bool{}
	}
	x.erased[key] = true
	e, ok := x.byID[key]
	if !ok {
		return
	}
	delete(x.byID, key)
	c := x.summaryOf(e)
	x.dropWords(workspaceID, e, c.Position())
	for _, term := range entryTerms(c) {
		if t := x.postings[postingKey(workspaceID, term)]; t != nil {
			t.Delete(postingOf(e))
		}
	}
	for k, v := range app.RangeValues(c) {
		if t := x.ranges[postingKey(workspaceID, k)]; t != nil {
			t.Delete(ranged{v: v, ord: e.ord})
		}
	}
	x.entries[e.ord] = nil // in no list or tree now
}

// ForgetConversation drops a deleted conversation at once (the record of
// its deletion on the stream does the same a moment later, on every
// replica).
func (x *ConversationIndex) ForgetConversation(_ context.Context, workspaceID, conversationID string) error {
	x.lockToChange()
	defer x.unlockChanged()
	x.forget(workspaceID, conversationID)
	return nil
}

// markDeleted keeps mark under commandID; x.mu is held.
func (x *ConversationIndex) markDeleted(commandID string, mark app.DeletionMark) {
	if commandID == "" {
		return
	}
	if x.deletedBy == nil {
		x.deletedBy = map[string]app.DeletionMark{}
	}
	x.deletedBy[commandID] = mark
}

// MarkDeleted implements app.DeletionMarks.
func (x *ConversationIndex) MarkDeleted(commandID string, mark app.DeletionMark) {
	x.lockToChange()
	defer x.unlockChanged()
	x.markDeleted(commandID, mark)
}

// DeletedBy implements app.DeletionMarks.
func (x *ConversationIndex) DeletedBy(commandID string) (app.DeletionMark, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	m, ok := x.deletedBy[commandID]
	return m, ok
}

// ConversationDeleted reports whether the conversation was deleted.
func (x *ConversationIndex) ConversationDeleted(workspaceID, conversationID string) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.erased[workspaceID+"/"+conversationID]
}

// Apply applies one PLATFORM record, as the directory does with what it
// follows (for the memory adapters' tests and rebuilds).
func (x *ConversationIndex) Apply(rec eventstore.Record) {
	if ev, ok := parseConversationEvent(rec); ok {
		_ = x.Record(context.Background(), rec.Seq, ev.summaryEvent())
	}
}

// DeletedRecord is the PLATFORM record of a conversation's deletion made
// by the command by (in its headers, with its workspace's).
func DeletedRecord(workspaceID, conversationID string, at time.Time, by app.Deleter) (*nats.Msg, error) {
	subject, err := events.PlatformSubject(workspaceID, ConversationDeletedEvent)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(map[string]string{"conversation_id": conversationID})
	if err != nil {
		return nil, err
	}
	msg := nats.NewMsg(subject)
	if msg.Data, err = json.Marshal(wire.Envelope{Event: ConversationDeletedEvent, Timestamp: wire.FormatTimestamp(at), Data: data}); err != nil {
		return nil, err
	}
	msg.Header.Set(events.HeaderWorkspaceID, workspaceID)
	if by.CommandID != "" {
		msg.Header.Set(events.HeaderCommandID, by.CommandID)
		msg.Header.Set(events.HeaderRequestDigest, by.RequestDigest)
	}
	return msg, nil
}

// StreamRemoval destroys a conversation's transcript key and records its
// deletion on PLATFORM.
type StreamRemoval struct {
	JS   jetstream.JetStream
	Keys convseal.Keys
}

// Shred implements app.ConversationRemoval.
func (s StreamRemoval) Shred(ctx context.Context, workspaceID, conversationID string) error {
	return s.Keys.Shred(ctx, workspaceID, conversationID)
}

// RecordDeleted implements app.ConversationRemoval. A retry within the
// stream's duplicate window is stored once; a later one again, which
// changes nothing. A keyed deletion's record is its command's: two
// deletions of the conversation under two keys at once (on two replicas)
// each keep their mark.
func (s StreamRemoval) RecordDeleted(ctx context.Context, workspaceID, conversationID string, at time.Time, by app.Deleter) error {
	msg, err := DeletedRecord(workspaceID, conversationID, at, by)
	if err != nil {
		return err
	}
	id := "conversation_deleted:" + workspaceID + "/" + conversationID
	if by.CommandID != "" {
		id += ":" + by.CommandID
	}
	_, err = eventstore.Publish(ctx, s.JS, msg, jetstream.WithMsgID(id), jetstream.WithExpectStream(events.PlatformStream))
	return err
}

// MemoryRemoval is the removal on memory adapters: the record goes
// straight to the index, as the stream would bring it.
type MemoryRemoval struct {
	Keys  convseal.Keys
	Index *ConversationIndex
}

// Shred implements app.ConversationRemoval.
func (m MemoryRemoval) Shred(ctx context.Context, workspaceID, conversationID string) error {
	return m.Keys.Shred(ctx, workspaceID, conversationID)
}

// RecordDeleted implements app.ConversationRemoval.
func (m MemoryRemoval) RecordDeleted(_ context.Context, workspaceID, conversationID string, at time.Time, by app.Deleter) error {
	msg, err := DeletedRecord(workspaceID, conversationID, at, by)
	if err != nil {
		return err
	}
	m.Index.Apply(eventstore.Record{Subject: msg.Subject, Header: eventlog.Header(msg.Header), Data: msg.Data, Time: at})
	return nil
}

// TranscriptProjection projects transcripts: a sealed one is opened with
// its conversation's key; once that key is destroyed, or the deletion is
// recorded, the conversation's document is a tombstone without turns, so
// a replay or a rebuild never brings the transcript back.
func TranscriptProjection(keys convseal.Keys) projection.Handler {
	return func(ctx context.Context, rec eventstore.Record) (string, any, error) {
		ev, ok := parseConversationEvent(rec)
		if !ok {
			return "", nil, nil
		}
		id := transcriptID(ev.WorkspaceID, ev.ConversationID)
		gone := TranscriptDoc{WorkspaceID: ev.WorkspaceID, ConversationID: ev.ConversationID, Deleted: true}
		switch {
		case ev.Name == ConversationDeletedEvent:
			return id, gone, nil
		case ev.Transcript != nil:
			// Handed over in the clear (before sealing, or published
			// straight on the stream): kept unless the conversation's
			// key says it was deleted since.
			if _, err := keys.Key(ctx, ev.WorkspaceID, ev.ConversationID, false); errors.Is(err, convseal.ErrShredded) {
				return id, gone, nil
			} else if err != nil && !errors.Is(err, convseal.ErrNoKey) {
				return "", nil, err
			}
			return id, TranscriptDoc{WorkspaceID: ev.WorkspaceID, ConversationID: ev.ConversationID, Turns: string(ev.Transcript)}, nil
		case !ev.Sealed.set || ev.turns == 0:
			return "", nil, nil
		}
		turns, err := ev.Sealed.open(ctx, keys, ev.WorkspaceID, ev.ConversationID)
		switch {
		case errors.Is(err, convseal.ErrShredded):
			return id, gone, nil
		case errors.Is(err, convseal.ErrNoKey), errors.Is(err, convseal.ErrTampered):
			return "", nil, nil // not one the API sealed: nothing to keep
		case err != nil:
			return "", nil, err
		}
		if countTurns(turns) == 0 {
			return "", nil, nil
		}
		return id, TranscriptDoc{WorkspaceID: ev.WorkspaceID, ConversationID: ev.ConversationID, Turns: string(turns)}, nil
	}
}

// ForgetConversation drops a deleted conversation's transcript at once
// (its projector writes the tombstone a moment later).
func (t Transcripts) ForgetConversation(ctx context.Context, workspaceID, conversationID string) error {
	_, err := t.Coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: transcriptID(workspaceID, conversationID)}})
	return err
}

// ForgetConversation replaces a deleted conversation's analysis and the
// label of it at once with tombstones at a sequence no event passes: a
// projector that judged the conversation not deleted a moment before
// would otherwise write its analysis (summary, rationales) back after a
// plain delete, for good.
func (v Verdicts) ForgetConversation(ctx context.Context, workspaceID, conversationID string) error {
	if _, err := projection.Upsert(ctx, v.AnalysesColl, workspaceID+"/"+conversationID, math.MaxInt64,
		AnalysisDoc{WorkspaceID: workspaceID, ConversationID: conversationID, Deleted: true}); err != nil {
		return err
	}
	_, err := projection.Upsert(ctx, v.LabelsColl, labelDocID(workspaceID, app.LabelKey{Kind: app.LabelOfConversation, ConversationID: conversationID}), math.MaxInt64,
		LabelDoc{WorkspaceID: workspaceID, Kind: app.LabelOfConversation, ConversationID: conversationID, Deleted: true})
	return err
}

// SkippingDeleted is h projecting nothing of a deleted conversation, so
// that a replay or a rebuild of the analyses and labels (stream
// TESTRUNS) does not bring its analysis back.
func SkippingDeleted(h projection.Handler, deleted func(workspaceID, conversationID string) bool) projection.Handler {
	return func(ctx context.Context, rec eventstore.Record) (string, any, error) {
		id, doc, err := h(ctx, rec)
		switch d := doc.(type) {
		case AnalysisDoc:
			if deleted(d.WorkspaceID, d.ConversationID) {
				return "", nil, nil
			}
		case LabelDoc:
			if d.ConversationID != "" && deleted(d.WorkspaceID, d.ConversationID) {
				return "", nil, nil
			}
		}
		return id, doc, err
	}
}
