package adapters

import (
	"context"
	"encoding/json"
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
)

// TranscriptsCollection keeps the transcripts handed over on
// conversation_ended, one document per conversation.
const TranscriptsCollection = "conversation_transcripts"

// TranscriptsDurable is the durable consumer that writes it.
const TranscriptsDurable = "tickets-transcripts"

// TranscriptsFilter is the only platform event that carries transcripts,
// and the record of a conversation's deletion.
var TranscriptsFilter = []string{"platform.evt.*.conversation_ended", ConversationDeletedFilter}

// TranscriptDoc is a conversation's transcript. The turns are kept as the
// JSON text they came in: the service serves them, never reads into them.
type TranscriptDoc struct {
	WorkspaceID    string `bson:"workspace_id"`
	ConversationID string `bson:"conversation_id"`
	Turns          string `bson:"transcript_json"`
	// Deleted marks a deleted conversation's tombstone: no turns.
	Deleted bool `bson:"deleted,omitempty"`
}

// Transcripts reads the transcripts collection.
type Transcripts struct{ Coll *mongo.Collection }

// OpenTranscripts opens the collection.
func OpenTranscripts(db *mongo.Database) Transcripts {
	return Transcripts{Coll: db.Collection(TranscriptsCollection)}
}

func transcriptID(workspaceID, conversationID string) string {
	return workspaceID + "/" + conversationID
}

// Transcript is the conversation's turns, or nil when none was handed
// over (yet: the projector writes it a moment after the event).
func (t Transcripts) Transcript(ctx context.Context, workspaceID, conversationID string) (json.RawMessage, error) {
	var doc TranscriptDoc
	err := t.Coll.FindOne(ctx, bson.D{{Key: "_id", Value: transcriptID(workspaceID, conversationID)}}).Decode(&doc)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if doc.Deleted || doc.Turns == "" {
		return nil, nil
	}
	return json.RawMessage(doc.Turns), nil
}

// TranscriptHandler is the projection of transcripts handed over in the
// clear (with no key store: a sealed one is skipped); a later one for
// the same conversation replaces it. The service projects with
// TranscriptProjection.
func TranscriptHandler(ctx context.Context, rec eventstore.Record) (string, any, error) {
	return TranscriptProjection(convseal.NewMemoryKeys())(ctx, rec)
}
