package adapters

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/consume"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/ids"
	"github.com/voiceai-platform/voiceai/pkg/mongox"
	"github.com/voiceai-platform/voiceai/pkg/projection"
	"github.com/voiceai-platform/voiceai/pkg/wire"
	"github.com/voiceai-platform/voiceai/services/agents/app"
)

// CallsCollection keeps each called agent's latest call.
const CallsCollection = "agent_calls"

// CallsDurable follows the platform's calls into the call log.
const CallsDurable = "agents-calls"

// CallsFilter matches the platform events that start a call of an agent.
var CallsFilter = []string{"platform.evt.*.call_started", "platform.evt.*.conversation_started"}

// CallLog is the call log in the store: one document per called agent,
// read by id for a page of the listing.
type CallLog struct{ Calls *mongo.Collection }

// NewCallLog opens the collection (its _id is its only index).
func NewCallLog(db *mongo.Database) *CallLog { return &CallLog{Calls: db.Collection(CallsCollection)} }

type callDoc struct {
	ID           string `bson:"_id"` // workspace/agent
	WorkspaceID  string `bson:"workspace_id"`
	AgentID      string `bson:"agent_id"`
	LastCallUnix int64  `bson:"last_call_unix"`
}

func callKey(workspaceID, agentID string) string { return workspaceID + "/" + agentID }

// latest keeps each agent's latest call of calls.
func latest(calls []app.Call) map[string]app.Call {
	out := make(map[string]app.Call, len(calls))
	for _, c := range calls {
		k := callKey(c.WorkspaceID, c.AgentID)
		if cur, ok := out[k]; !ok || c.AtUnix > cur.AtUnix {
			out[k] = c
		}
	}
	return out
}

// Record implements app.CallLog: one upsert per agent, which keeps the
// later of the stored and the new time, sent recordChunk at a time.
func (l *CallLog) Record(ctx context.Context, calls []app.Call) error {
	var models []mongo.WriteModel
	for k, c := range latest(calls) {
		models = append(models, mongo.NewUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: k}}).SetUpsert(true).SetUpdate(bson.D{
			{Key: "$max", Value: bson.D{{Key: "last_call_unix", Value: c.AtUnix}}},
			{Key: "$setOnInsert", Value: bson.D{{Key: "workspace_id", Value: c.WorkspaceID}, {Key: "agent_id", Value: c.AgentID}}},
		}))
	}
	for chunk := range slices.Chunk(models, recordChunk) {
		if _, err := l.Calls.BulkWrite(ctx, chunk, options.BulkWrite().SetOrdered(false)); err != nil {
			return err
		}
	}
	return nil
}

// recordChunk bounds the updates of one command. The embedded store
// (FerretDB on SQLite) keeps a read of its own open for each update of a
// command that finds its document, until the command ends: past about a
// hundred, it waited for ever for a connection, so a batch of calls of
// more than a hundred agents already called never ended (a restart that
// replays the call log was never ready; the follower stuck on it).
const recordChunk = 50

// LastCalls implements app.CallLog.
func (l *CallLog) LastCalls(ctx context.Context, workspaceID string, agentIDs []string) (map[string]int64, error) {
	keys := make([]string, len(agentIDs))
	for i, id := range agentIDs {
		keys[i] = callKey(workspaceID, id)
	}
	// The store's call log is read in store mode, on MongoDB; the
	// embedded store's memory read index keeps the calls in memory
	// (FollowCallsInto).
	docs, err := mongox.ByIDs[callDoc](ctx, l.Calls, keys, mongox.OneQuery)
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(docs))
	for _, d := range docs {
		out[d.AgentID] = d.LastCallUnix
	}
	return out, nil
}

// FollowCalls records the platform's calls in log through the durable
// consumer CallsDurable until ctx ends; a batch that cannot be recorded
// is retried. An event that names no well-formed agent is skipped. While
// hold says why not (may be nil), it records nothing.
func FollowCalls(ctx context.Context, js jetstream.JetStream, log app.CallLog, logger *slog.Logger, hold func() error) error {
	return consume.Batches(ctx, js, consume.Spec{
		Stream: events.PlatformStream, Durable: CallsDurable, FilterSubjects: CallsFilter, Log: logger, Hold: hold,
		OnError: func(batch []jetstream.Msg, err error) {
			logger.Error("call log write failed; will retry", "messages", len(batch), "err", err)
		},
	}, func(ctx context.Context, batch []jetstream.Msg) error {
		calls := make([]app.Call, 0, len(batch))
		for _, m := range batch {
			if c, ok := callOf(m); ok {
				calls = append(calls, c)
			}
		}
		return log.Record(ctx, calls)
	})
}

// GuardCalls guards the store's call log, FollowCalls' copy, as a
// projection's collection is (projection.Guard): dropped, or restored
// from an older backup, it is replayed from the stream, holding while
// hold (nil: never) says to, as FollowCalls does. Its first look is done
// when it returns, before anything reads the copy.
func GuardCalls(ctx context.Context, js jetstream.JetStream, store *CallLog, logger *slog.Logger, hold func() error) (stop func()) {
	return projection.Guard(ctx, js, store.Calls,
		projection.Config{Stream: events.PlatformStream, Durable: CallsDurable, FilterSubjects: CallsFilter, Logger: logger, Hold: hold},
		func(ctx context.Context, recs []eventstore.Record) (int, error) {
			calls := make([]app.Call, 0, len(recs))
			for _, rec := range recs {
				if c, ok := callIn(rec.Subject, rec.Data, rec.Time); ok {
					calls = append(calls, c)
				}
			}
			return len(calls), store.Record(ctx, calls) // latest calls ($max): the same again changes nothing
		})
}

// callOf is the call a call_started or conversation_started event reports.
func callOf(m jetstream.Msg) (app.Call, bool) {
	meta, err := m.Metadata()
	if err != nil {
		return app.Call{}, false
	}
	return callIn(m.Subject(), m.Data(), meta.Timestamp)
}

// callIn is the call an event on subject reports, stored at storedAt.
func callIn(subject string, body []byte, storedAt time.Time) (app.Call, bool) {
	ws, _, ok := events.ParsePlatformSubject(subject)
	if !ok || !ids.Valid(ws) {
		return app.Call{}, false
	}
	var env wire.Envelope
	var data struct {
		AgentID string `json:"agent_id"`
	}
	if json.Unmarshal(body, &env) != nil || json.Unmarshal(env.Data, &data) != nil || !ids.Valid(data.AgentID) {
		return app.Call{}, false
	}
	return app.Call{WorkspaceID: ws, AgentID: data.AgentID, AtUnix: env.At(storedAt).Unix()}, true
}

// FollowCallsInto keeps log (a replica's own, in memory) current with
// every call: the calls the store holds, read once, and from PLATFORM
// those its copy had not acknowledged yet, then each new one. The copy's
// durable consumer shares calls out among replicas; this follower sees
// them all. It returns once what PLATFORM held is applied.
func FollowCallsInto(ctx context.Context, js jetstream.JetStream, store *CallLog, log app.CallLog, logger *slog.Logger) error {
	var copied uint64 // every call at or below is in the store
	c, err := js.Consumer(ctx, events.PlatformStream, CallsDurable)
	switch {
	case err == nil:
		copied = c.CachedInfo().AckFloor.Stream
	case !errors.Is(err, jetstream.ErrConsumerNotFound):
		return err
	}
	f, err := eventstore.FollowAfter(ctx, js, events.PlatformStream, CallsFilter, copied, func(rec eventstore.Record) {
		if c, ok := callIn(rec.Subject, rec.Data, rec.Time); ok {
			_ = log.Record(ctx, []app.Call{c}) // in memory: never fails
		}
	})
	if err != nil {
		return err
	}
	cur, err := store.Calls.Find(ctx, bson.D{})
	if err != nil {
		return err
	}
	var docs []callDoc
	if err := cur.All(ctx, &docs); err != nil {
		return err
	}
	calls := make([]app.Call, len(docs))
	for i, d := range docs {
		calls[i] = app.Call{WorkspaceID: d.WorkspaceID, AgentID: d.AgentID, AtUnix: d.LastCallUnix}
	}
	if err := log.Record(ctx, calls); err != nil {
		return err
	}
	logger.Debug("call log loaded", "agents", len(docs), "after", copied)
	return f.Wait(ctx)
}
