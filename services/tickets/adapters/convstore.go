package adapters

import (
	"context"
	"encoding/hex"
	"errors"
	"math"
	"slices"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	events "github.com/voiceai-platform/voiceai/proto-events"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/mongox"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// ConversationsCollection is the store read model of conversations (with
// VOICEAI_READ_INDEX=store), one document per conversation.
const ConversationsCollection = "conversations"

// The durable consumers that write it: the platform's conversation events
// and the annotations on TICKETS.
const (
	ConversationsDurable = "tickets-conversations"
	AnnotationsDurable   = "tickets-conversation-annotations"
)

// ConversationDoc is a conversation's summary with its index terms: the
// platform part (written by Record, guarded by plat_seq) and the
// annotations part (written by Annotate, guarded by ann_seq) are set
// apart, so the two projectors never overwrite each other.
type ConversationDoc struct {
	ID               string    `bson:"_id"` // workspace/conversation: in one workspace it orders as the conversation id
	WorkspaceID      string    `bson:"workspace_id"`
	ConversationID   string    `bson:"conversation_id"`
	Seen             bool      `bson:"seen"`
	AgentID          string    `bson:"agent_id"`
	StartedMs        int64     `bson:"started_at_unix_ms"`
	EndedMs          int64     `bson:"ended_at_unix_ms"`
	DurationSecs     int64     `bson:"call_duration_secs"`
	DurationReported bool      `bson:"duration_reported"`
	MessageCount     int       `bson:"message_count"`
	Status           string    `bson:"status"`
	CallSuccessful   string    `bson:"call_successful"`
	Summary          string    `bson:"transcript_summary"`
	Evaluations      []keyText `bson:"evaluations"` // ids may hold '.' or '$': not field names
	DataCollection   []keyText `bson:"data_collection"`
	// DataNumbers are the numeric values, by hex of the id (a field name
	// never holds '.' or '$'), which gt, gte, lt and lte compare.
	DataNumbers     map[string]float64 `bson:"data_numbers"`
	ToolNames       []string           `bson:"tool_names"`
	ToolsErrored    []string           `bson:"tool_names_errored"`
	Words           []string           `bson:"words"`
	Terms           []string           `bson:"terms"`
	PlatSeq         int64              `bson:"plat_seq"`
	Feedback        string             `bson:"feedback"`
	Rating          int                `bson:"rating"`
	TagIDs          []string           `bson:"tag_ids"`
	AnnotationTerms []string           `bson:"aterms"`
	AnnSeq          int64              `bson:"ann_seq"`
}

type keyText struct {
	Key  string `bson:"k"`
	Text string `bson:"v"`
}

func numberField(id string) string { return "data_numbers." + hex.EncodeToString([]byte(id)) }

// ConversationStore is the MongoDB read model of conversations: every
// filter, the order and the keyset cursor go into one query per page
// (limit page + 1), served by a multikey index on each document's terms
// (app.PlatformTerms, app.AnnotationTerms) in listing order.
type ConversationStore struct{ Coll *mongo.Collection }

// NewConversationStore opens the collection and its indexes.
func NewConversationStore(ctx context.Context, db *mongo.Database) (*ConversationStore, error) {
	c := db.Collection(ConversationsCollection)
	idx := func(field string) mongo.IndexModel {
		return mongo.IndexModel{Keys: bson.D{{Key: "workspace_id", Value: 1}, {Key: field, Value: 1},
			{Key: "started_at_unix_ms", Value: -1}, {Key: "_id", Value: -1}}}
	}
	if err := mongox.EnsureIndexes(ctx, c, idx("seen"), idx("terms"), idx("aterms")); err != nil {
		return nil, err
	}
	return &ConversationStore{Coll: c}, nil
}

func convKey(workspaceID, conversationID string) string { return workspaceID + "/" + conversationID }

// summary is the document as the application sees it.
func (d ConversationDoc) summary() app.ConversationSummary {
	c := app.ConversationSummary{
		WorkspaceID: d.WorkspaceID, ConversationID: d.ConversationID, AgentID: d.AgentID, Seen: d.Seen,
		StartedAtMs: d.StartedMs, EndedAtMs: d.EndedMs, DurationSecs: d.DurationSecs, DurationReported: d.DurationReported,
		MessageCount: d.MessageCount, Status: d.Status, CallSuccessful: d.CallSuccessful, Summary: d.Summary,
		ToolNames: d.ToolNames, ToolsErrored: d.ToolsErrored, Words: d.Words, Feedback: d.Feedback, TagIDs: d.TagIDs,
	}
	for _, e := range d.Evaluations {
		if c.Evaluations == nil {
			c.Evaluations = map[string]string{}
		}
		c.Evaluations[e.Key] = e.Text
	}
	for _, e := range d.DataCollection {
		if c.DataCollection == nil {
			c.DataCollection = map[string]string{}
		}
		c.DataCollection[e.Key] = e.Text
	}
	return c.WithDataNumbers()
}

// platformFields are the document fields Record owns.
func platformFields(c app.ConversationSummary, seq uint64) bson.D {
	var evals, data []keyText
	numbers := map[string]float64{}
	for _, k := range sortedKeys(c.Evaluations) {
		evals = append(evals, keyText{Key: k, Text: c.Evaluations[k]})
	}
	for _, k := range sortedKeys(c.DataCollection) {
		e := keyText{Key: k, Text: c.DataCollection[k]}
		if n, err := strconv.ParseFloat(e.Text, 64); err == nil && !math.IsNaN(n) {
			numbers[hex.EncodeToString([]byte(k))] = n
		}
		data = append(data, e)
	}
	return bson.D{
		{Key: "workspace_id", Value: c.WorkspaceID}, {Key: "conversation_id", Value: c.ConversationID},
		{Key: "seen", Value: c.Seen}, {Key: "agent_id", Value: c.AgentID},
		{Key: "started_at_unix_ms", Value: c.StartedAtMs}, {Key: "ended_at_unix_ms", Value: c.EndedAtMs},
		{Key: "call_duration_secs", Value: c.DurationSecs}, {Key: "duration_reported", Value: c.DurationReported},
		{Key: "message_count", Value: c.MessageCount}, {Key: "status", Value: c.Status},
		{Key: "call_successful", Value: c.CallSuccessful}, {Key: "transcript_summary", Value: c.Summary},
		{Key: "evaluations", Value: evals}, {Key: "data_collection", Value: data}, {Key: "data_numbers", Value: numbers},
		{Key: "tool_names", Value: c.ToolNames}, {Key: "tool_names_errored", Value: c.ToolsErrored},
		{Key: "words", Value: c.Words}, {Key: "terms", Value: app.PlatformTerms(c)}, {Key: "plat_seq", Value: int64(seq)},
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// recordAttempts bounds the retries of a read-modify-write that raced
// another writer of the same conversation.
const recordAttempts = 20

// Record applies a platform event of PLATFORM sequence seq: it reads the
// conversation, applies the event and writes the platform part back on
// the condition that nobody wrote it meanwhile.
func (s *ConversationStore) Record(ctx context.Context, seq uint64, ev app.ConversationEvent) error {
	if ev.Name == ConversationDeletedEvent {
		return s.ForgetConversation(ctx, ev.WorkspaceID, ev.ConversationID)
	}
	id := convKey(ev.WorkspaceID, ev.ConversationID)
	for range recordAttempts {
		var d ConversationDoc
		err := s.Coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d)
		found := err == nil
		if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
			return err
		}
		c := d.summary()
		c.WorkspaceID, c.ConversationID = ev.WorkspaceID, ev.ConversationID
		next, at := c.Applied(ev), seq
		if found && uint64(d.PlatSeq) >= seq {
			// A redelivery, or an older event (a start after its end):
			// applied as one, at the sequence the document holds.
			var changed bool
			if next, changed = c.AppliedLate(ev); !changed {
				return nil
			}
			at = uint64(d.PlatSeq)
		}
		set := platformFields(next, at)
		if found {
			res, err := s.Coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "plat_seq", Value: d.PlatSeq}}, bson.D{{Key: "$set", Value: set}})
			if err != nil {
				return err
			}
			if res.MatchedCount == 1 {
				return nil
			}
			continue
		}
		doc := append(bson.D{{Key: "_id", Value: id}}, set...)
		doc = append(doc, bson.E{Key: "ann_seq", Value: int64(0)}, bson.E{Key: "rating", Value: 0})
		if _, err := s.Coll.InsertOne(ctx, doc); err == nil || !mongo.IsDuplicateKeyError(err) {
			return err
		}
	}
	return errors.New("conversation read model: too many concurrent writes to " + id)
}

// ForgetConversation replaces a deleted conversation's document with a
// tombstone: never seen (so never listed nor looked up), without its
// summary, words or terms, and with sequences no event passes, so a
// redelivery or a replay writes nothing of it again.
func (s *ConversationStore) ForgetConversation(ctx context.Context, workspaceID, conversationID string) error {
	tomb := bson.D{
		{Key: "_id", Value: convKey(workspaceID, conversationID)}, {Key: "workspace_id", Value: workspaceID},
		{Key: "conversation_id", Value: conversationID}, {Key: "seen", Value: false}, {Key: "deleted", Value: true},
		{Key: "plat_seq", Value: int64(math.MaxInt64)}, {Key: "ann_seq", Value: int64(math.MaxInt64)},
	}
	_, err := s.Coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: convKey(workspaceID, conversationID)}}, tomb, options.Replace().SetUpsert(true))
	return err
}

// Annotate writes the annotations of TICKETS sequence seq, unless a newer
// one was written.
func (s *ConversationStore) Annotate(ctx context.Context, seq uint64, a *ticketsv1.ConversationAnnotations) error {
	c := app.ConversationSummary{}.Annotated(a)
	set := bson.D{
		{Key: "workspace_id", Value: a.WorkspaceId}, {Key: "conversation_id", Value: a.ConversationId},
		{Key: "feedback", Value: c.Feedback}, {Key: "rating", Value: c.Rating()}, {Key: "tag_ids", Value: c.TagIDs},
		{Key: "aterms", Value: app.AnnotationTerms(c)}, {Key: "ann_seq", Value: int64(seq)},
	}
	// A duplicate key is the document there already, its annotation not
	// older (the filter did not match it), or made by Record between the
	// filter's look and the insert (a conversation's first event and its
	// first annotation written at once, as the two replays of a store
	// dropped do): asked again, the filter then decides.
	for range 2 {
		_, err := s.Coll.UpdateOne(ctx,
			bson.D{{Key: "_id", Value: convKey(a.WorkspaceId, a.ConversationId)}, {Key: "ann_seq", Value: bson.D{{Key: "$lt", Value: int64(seq)}}}},
			bson.D{{Key: "$set", Value: set}, {Key: "$setOnInsert", Value: bson.D{{Key: "seen", Value: false}, {Key: "plat_seq", Value: int64(0)}}}},
			options.UpdateOne().SetUpsert(true))
		if !mongo.IsDuplicateKeyError(err) {
			return err
		}
	}
	return nil // the document holds a newer (or the same) annotation
}

// ConversationSummary looks one seen conversation up.
func (s *ConversationStore) ConversationSummary(ctx context.Context, workspaceID, conversationID string) (app.ConversationSummary, bool, error) {
	var d ConversationDoc
	err := s.Coll.FindOne(ctx, bson.D{{Key: "_id", Value: convKey(workspaceID, conversationID)}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) || err == nil && !d.Seen {
		return app.ConversationSummary{}, false, nil
	}
	if err != nil {
		return app.ConversationSummary{}, false, err
	}
	return d.summary(), true, nil
}

// ConversationFilter is the store query of q, its cursor included; ok is
// false when nothing can match.
func ConversationFilter(q app.ConversationQuery) (filter bson.D, ok bool) {
	and := bson.A{bson.D{{Key: "workspace_id", Value: q.WorkspaceID}}, bson.D{{Key: "seen", Value: true}}}
	add := func(key string, v any) { and = append(and, bson.D{{Key: key, Value: v}}) }
	op := func(o string, v any) bson.D { return bson.D{{Key: o, Value: v}} }
	for _, g := range q.Groups() {
		if len(g) == 0 {
			return nil, false
		}
		field := "terms"
		if app.IsAnnotationTerm(g[0]) {
			field = "aterms"
		}
		if len(g) == 1 {
			add(field, g[0])
		} else {
			add(field, op("$in", g))
		}
	}
	// What the groups do not say exactly.
	if q.StartedBefore != 0 {
		add("started_at_unix_ms", op("$lt", q.StartedBefore*1000))
	}
	if q.StartedAfter != 0 {
		add("started_at_unix_ms", op("$gt", q.StartedAfter*1000+999))
	}
	if q.DurationMin != nil {
		add("call_duration_secs", op("$gte", *q.DurationMin))
	}
	if q.DurationMax != nil {
		add("call_duration_secs", op("$lte", *q.DurationMax))
	}
	for _, d := range q.DataCollection {
		dataTerm := func(v string) string { return app.DataTerm(d.ID, v) }
		switch d.Op {
		case "eq", "in":
			if slices.Contains(d.Values, "") { // not collected, or any of the others
				terms := []string{}
				for _, v := range d.Values {
					if v != "" {
						terms = append(terms, dataTerm(v))
					}
				}
				and = append(and, op("$or", bson.A{
					bson.D{{Key: "terms", Value: op("$ne", app.CollectedTerm(d.ID))}},
					bson.D{{Key: "terms", Value: op("$in", terms)}},
				}))
			}
		case "neq":
			if d.Values[0] != "" {
				add("terms", op("$ne", dataTerm(d.Values[0])))
			}
		default:
			add(numberField(d.ID), op("$"+d.Op, d.Number))
		}
	}
	if q.After != nil {
		and = append(and, mongox.After(true, mongox.Key{Field: "started_at_unix_ms", Value: q.After.StartedAtMs},
			mongox.Key{Field: "_id", Value: convKey(q.WorkspaceID, q.After.ID)}))
	}
	return bson.D{{Key: "$and", Value: and}}, true
}

// ConversationSort is the listing order: newest first, then id.
var ConversationSort = mongox.Order(true, "started_at_unix_ms", "_id")

// ConversationPage answers a page with one query: limit page + 1.
func (s *ConversationStore) ConversationPage(ctx context.Context, q app.ConversationQuery) ([]app.ConversationSummary, bool, error) {
	filter, ok := ConversationFilter(q)
	if !ok {
		return nil, false, nil
	}
	cur, err := s.Coll.Find(ctx, filter, options.Find().SetSort(ConversationSort).SetLimit(int64(q.Limit+1)))
	if err != nil {
		return nil, false, err
	}
	var docs []ConversationDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, false, err
	}
	rows := make([]app.ConversationSummary, 0, len(docs))
	for _, d := range docs {
		rows = append(rows, d.summary())
	}
	more := len(rows) > q.Limit
	return rows[:min(len(rows), q.Limit)], more, nil
}

// RecordConversation is the projection of one PLATFORM record into w: a
// conversation event (its sealed transcript read with keys), its
// deletion, else nothing.
func RecordConversation(ctx context.Context, w app.ConversationWriter, keys convseal.Keys, rec eventstore.Record) error {
	ev, ok := parseConversationEvent(rec)
	if !ok {
		return nil
	}
	ev.openSealed(ctx, keys)
	return w.Record(ctx, rec.Seq, ev.summaryEvent())
}

// AnnotateConversation is the projection of one TICKETS record into w:
// the annotations it carries, else nothing.
func AnnotateConversation(ctx context.Context, w app.ConversationWriter, rec eventstore.Record) error {
	msg, err := esproto.Decode(rec)
	if err != nil {
		return nil // not ours to judge: the ticket projections log it
	}
	if a, ok := events.StateOf[*ticketsv1.ConversationAnnotations](msg); ok {
		return w.Annotate(ctx, rec.Seq, a)
	}
	return nil
}
