package adapters

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/projection"
)

// ReportedCollection keeps the analysis a call stack reported on
// conversation_ended (the public shape: criteria results with their
// rationales, data collected with values of any JSON type), one document
// per conversation, as it came: the conversation's GET answers it. The
// listings read only what they filter on, from the conversation's summary.
const ReportedCollection = "conversation_reported_analyses"

// ReportedDurable is the durable consumer that writes it.
const ReportedDurable = "tickets-reported-analyses"

// ReportedDoc is what a conversation's last conversation_ended reported.
type ReportedDoc struct {
	WorkspaceID    string `bson:"workspace_id"`
	ConversationID string `bson:"conversation_id"`
	Analysis       string `bson:"analysis_json"` // a JSON object, or "" when it reported none
	// Deleted marks a deleted conversation's tombstone.
	Deleted bool `bson:"deleted,omitempty"`
}

// Reported reads the reported analyses.
type Reported struct{ Coll *mongo.Collection }

// OpenReported opens the collection.
func OpenReported(db *mongo.Database) Reported {
	return Reported{Coll: db.Collection(ReportedCollection)}
}

// Reported is the analysis the conversation's last conversation_ended
// carried, or nil (none, or not projected yet: a moment after the event).
func (r Reported) Reported(ctx context.Context, workspaceID, conversationID string) (json.RawMessage, error) {
	var doc ReportedDoc
	err := r.Coll.FindOne(ctx, bson.D{{Key: "_id", Value: transcriptID(workspaceID, conversationID)}}).Decode(&doc)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	if err != nil || doc.Deleted || doc.Analysis == "" {
		return nil, err
	}
	return json.RawMessage(doc.Analysis), nil
}

// ForgetConversation drops a deleted conversation's analysis at once (its
// projector writes the tombstone a moment later).
func (r Reported) ForgetConversation(ctx context.Context, workspaceID, conversationID string) error {
	_, err := r.Coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: transcriptID(workspaceID, conversationID)}})
	return err
}

// ReportedProjection projects conversation_ended's analysis, opened with
// the conversation's key when it came sealed: a later one replaces it (one
// reporting none clears it, as the summary's filters are cleared), and a
// deletion leaves a tombstone, as does a sealed analysis whose key was
// destroyed. One that came in the clear (published before sealing, or
// straight on the stream) of a conversation deleted already (deleted, the
// conversation index's word) is not written again by a projector still
// behind the deletion's record.
func ReportedProjection(keys convseal.Keys, deleted func(workspaceID, conversationID string) bool) projection.Handler {
	return func(ctx context.Context, rec eventstore.Record) (string, any, error) {
		ev, ok := parseConversationEvent(rec)
		if !ok || ev.Name == "conversation_started" {
			return "", nil, nil
		}
		id := transcriptID(ev.WorkspaceID, ev.ConversationID)
		gone := ReportedDoc{WorkspaceID: ev.WorkspaceID, ConversationID: ev.ConversationID, Deleted: true}
		if ev.Name == ConversationDeletedEvent {
			return id, gone, nil
		}
		switch err := ev.openAnalysis(ctx, keys); {
		case errors.Is(err, convseal.ErrShredded):
			return id, gone, nil
		case err != nil && !errors.Is(err, convseal.ErrTampered) && !errors.Is(err, convseal.ErrNoKey):
			return "", nil, err // the key store did not answer: the record is redelivered
		case !ev.SealedAnalysis.set && deleted(ev.WorkspaceID, ev.ConversationID):
			return "", nil, nil
		}
		doc := ReportedDoc{WorkspaceID: ev.WorkspaceID, ConversationID: ev.ConversationID}
		if a := bytes.TrimSpace(ev.RawAnalysis); len(a) > 0 && a[0] == '{' && ev.analysisParsed {
			doc.Analysis = string(a)
		}
		return id, doc, nil
	}
}
