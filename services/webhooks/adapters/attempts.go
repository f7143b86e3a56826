package adapters

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/consume"
	"github.com/voiceai-platform/voiceai/pkg/mongox"
	"github.com/voiceai-platform/voiceai/services/webhooks/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// StreamAttemptLog is app.AttemptLog on the WEBHOOK_ATTEMPTS stream:
// Record adds the attempt to the in-memory log and publishes it, and the
// log follows the stream for the attempts other processes record.
type StreamAttemptLog struct {
	*memory.AttemptLog
	JS jetstream.JetStream
}

// FollowAttemptLog replays the attempts stream into l and follows it; it
// returns once the replay is complete.
func FollowAttemptLog(ctx context.Context, js jetstream.JetStream, l *memory.AttemptLog, log *slog.Logger) error {
	return FollowAttempts(ctx, js, log, l.Add)
}

// Record adds a to the log and publishes it, without waiting for the
// stream's answer.
func (l StreamAttemptLog) Record(ctx context.Context, a *webhooksv1.DeliveryAttempt) error {
	l.Add(a)
	return AttemptPublisher{JS: l.JS}.Record(ctx, a)
}

// RecordDurable adds a to the log and publishes it, waiting for the
// stream's answer.
func (l StreamAttemptLog) RecordDurable(ctx context.Context, a *webhooksv1.DeliveryAttempt) error {
	l.Add(a)
	return AttemptPublisher{JS: l.JS}.RecordDurable(ctx, a)
}

// AttemptPublisher is app.AttemptRecorder on the WEBHOOK_ATTEMPTS stream
// alone: a dispatcher records its attempts there for every process that
// follows the stream (the API's delivery log, the auto-disable rule, the
// durable log in Mongo), keeping none itself.
type AttemptPublisher struct{ JS jetstream.JetStream }

// Record publishes a, deduplicated by its attempt id, without waiting for
// the stream's answer.
func (p AttemptPublisher) Record(_ context.Context, a *webhooksv1.DeliveryAttempt) error {
	msg, err := attemptMsg(a)
	if err != nil {
		return err
	}
	_, err = p.JS.PublishMsgAsync(msg, jetstream.WithMsgID(a.GetAttemptId()))
	return err
}

// RecordDurable publishes a, deduplicated by its attempt id, and waits
// for the stream to store it.
func (p AttemptPublisher) RecordDurable(ctx context.Context, a *webhooksv1.DeliveryAttempt) error {
	msg, err := attemptMsg(a)
	if err != nil {
		return err
	}
	_, err = p.JS.PublishMsg(ctx, msg, jetstream.WithMsgID(a.GetAttemptId()))
	return err
}

// attemptMsg is a as a WEBHOOK_ATTEMPTS record.
func attemptMsg(a *webhooksv1.DeliveryAttempt) (*nats.Msg, error) {
	subject, err := events.WebhookAttemptSubject(a.GetWorkspaceId(), a.GetWebhookId())
	if err != nil {
		return nil, err
	}
	return protoMsg(subject, a, a.GetWorkspaceId(), a.GetEventId())
}

// attemptDoc is one attempt in the Mongo delivery log.
type attemptDoc struct {
	ID           string `bson:"_id"`
	EventID      string `bson:"event_id"`
	WorkspaceID  string `bson:"workspace_id"`
	WebhookID    string `bson:"webhook_id"`
	Event        string `bson:"event"`
	AtUnixMs     int64  `bson:"at_unix_ms"`
	Success      bool   `bson:"success"`
	ResponseCode int32  `bson:"response_code"`
	DurationMs   int64  `bson:"duration_ms"`
	RetryCount   int32  `bson:"retry_count"`
	Error        string `bson:"error,omitempty"`
	Final        bool   `bson:"final"`
	Test         bool   `bson:"test,omitempty"`
	DeliveryID   string `bson:"delivery_id"`
	ResendID     string `bson:"resend_id,omitempty"`
	RequestBody  []byte `bson:"request_body,omitempty"`
	ResponseBody string `bson:"response_body,omitempty"`
}

func docOf(a *webhooksv1.DeliveryAttempt) attemptDoc {
	return attemptDoc{
		ID: a.GetAttemptId(), EventID: a.GetEventId(), WorkspaceID: a.GetWorkspaceId(), WebhookID: a.GetWebhookId(),
		Event: a.GetEvent(), AtUnixMs: a.GetAtUnixMs(), Success: a.GetSuccess(), ResponseCode: a.GetResponseCode(),
		DurationMs: a.GetDurationMs(), RetryCount: a.GetRetryCount(), Error: a.GetError(), Final: a.GetFinal(), Test: a.GetTest(),
		DeliveryID: app.DeliveryID(a), ResendID: a.GetResendId(), RequestBody: a.GetRequestBody(), ResponseBody: a.GetResponseBody(),
	}
}

func (d attemptDoc) attempt() *webhooksv1.DeliveryAttempt {
	return &webhooksv1.DeliveryAttempt{
		AttemptId: d.ID, EventId: d.EventID, WorkspaceId: d.WorkspaceID, WebhookId: d.WebhookID, Event: d.Event,
		AtUnixMs: d.AtUnixMs, Success: d.Success, ResponseCode: d.ResponseCode, DurationMs: d.DurationMs, RetryCount: d.RetryCount,
		Error: d.Error, Final: d.Final, Test: d.Test, ResendId: d.ResendID, RequestBody: d.RequestBody, ResponseBody: d.ResponseBody,
	}
}

// AttemptStore is the durable delivery log in Mongo: every attempt,
// beyond what the stream and the memory keep.
type AttemptStore struct{ Coll *mongo.Collection }

// Older returns up to limit attempts of a webhook that f selects, made
// before beforeMs (0: any time), newest first.
func (s AttemptStore) Older(ctx context.Context, webhookID string, f domain.LogFilter, beforeMs int64, limit int) ([]*webhooksv1.DeliveryAttempt, error) {
	filter := bson.D{{Key: "webhook_id", Value: webhookID}}
	at := bson.D{}
	if f.FromMs != 0 {
		at = append(at, bson.E{Key: "$gte", Value: f.FromMs})
	}
	to := f.ToMs
	if beforeMs != 0 && (to == 0 || beforeMs < to) {
		to = beforeMs
	}
	if to != 0 {
		at = append(at, bson.E{Key: "$lt", Value: to})
	}
	if len(at) > 0 {
		filter = append(filter, bson.E{Key: "at_unix_ms", Value: at})
	}
	if f.Event != "" {
		filter = append(filter, bson.E{Key: "event", Value: f.Event})
	}
	if f.Status != "" {
		filter = append(filter, bson.E{Key: "success", Value: f.Status == domain.LogSuccess})
	}
	cur, err := s.Coll.Find(ctx, filter, options.Find().SetSort(bson.D{{Key: "at_unix_ms", Value: -1}}).SetLimit(int64(limit)))
	if err != nil {
		return nil, err
	}
	var docs []attemptDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, err
	}
	out := make([]*webhooksv1.DeliveryAttempt, len(docs))
	for i, d := range docs {
		out[i] = d.attempt()
	}
	return out, nil
}

// FirstAttempt returns the first attempt of a delivery of a webhook (the
// one that keeps the request body), or nil.
func (s AttemptStore) FirstAttempt(ctx context.Context, webhookID, deliveryID string) (*webhooksv1.DeliveryAttempt, error) {
	var d attemptDoc
	err := s.Coll.FindOne(ctx, bson.D{{Key: "webhook_id", Value: webhookID}, {Key: "delivery_id", Value: deliveryID}, {Key: "retry_count", Value: 0}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return d.attempt(), nil
}

// AttemptsStoreDurable is the consumer that copies attempts to Mongo. It
// replaced "webhooks-attempts-store" (ack-all, which a consumer cannot
// change to explicit acks in place): StoreAttempts deletes that one, and
// the new one copies the stream again, each attempt stored once.
const AttemptsStoreDurable = "webhooks-attempts-mongo"

// StoreAttempts copies every attempt record into coll (the durable
// delivery log, kept beyond the stream's retention) through the durable
// consumer AttemptsStoreDurable, in batches: one InsertMany per batch,
// then the batch acknowledged (redelivered with back-off when the write
// fails). It runs until ctx ends.
func StoreAttempts(ctx context.Context, js jetstream.JetStream, coll *mongo.Collection, log *slog.Logger) error {
	if err := mongox.EnsureIndexes(ctx, coll,
		mongo.IndexModel{Keys: bson.D{{Key: "webhook_id", Value: 1}, {Key: "at_unix_ms", Value: -1}}},
		mongo.IndexModel{Keys: bson.D{{Key: "webhook_id", Value: 1}, {Key: "delivery_id", Value: 1}}},
	); err != nil {
		return err
	}
	// Earlier versions indexed event_id, which no query reads: every
	// attempt written paid for it.
	if err := coll.Indexes().DropOne(ctx, unusedEventIndex); err != nil && !indexNotFound(err) {
		log.Warn("the unused event_id index of the attempts is left behind", "err", err)
	}
	if err := js.DeleteConsumer(ctx, events.WebhookAttemptsStream, "webhooks-attempts-store"); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		log.Warn("the replaced attempts consumer is left behind", "err", err)
	}
	spec := consume.Spec{
		Stream: events.WebhookAttemptsStream, Durable: AttemptsStoreDurable, FilterSubjects: []string{events.WebhookAttemptsAll},
		AckWait: time.Minute, MaxBatch: 500, MaxAckPending: 10000, Linger: 100 * time.Millisecond,
		OnError: func(_ []jetstream.Msg, err error) { log.Warn("attempt log write failed; will retry", "err", err) },
	}
	go func() {
		if err := consume.Batches(ctx, js, spec, func(ctx context.Context, batch []jetstream.Msg) error {
			return storeBatch(ctx, coll, batch)
		}); err != nil {
			log.Error("attempts are not copied to the durable log", "err", err)
		}
	}()
	return nil
}

// storeBatch inserts the attempts of batch; an undecodable record is
// skipped, one already stored (a redelivery) is no failure.
func storeBatch(ctx context.Context, coll *mongo.Collection, batch []jetstream.Msg) error {
	docs := make([]any, 0, len(batch))
	for _, m := range batch {
		var a webhooksv1.DeliveryAttempt
		if proto.Unmarshal(m.Data(), &a) != nil {
			continue
		}
		docs = append(docs, docOf(&a))
	}
	if len(docs) == 0 {
		return nil
	}
	_, err := coll.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
	if err != nil && !onlyDuplicates(err) {
		return err
	}
	return nil
}

// unusedEventIndex is the index on event_id that earlier versions made.
const unusedEventIndex = "event_id_1"

// indexNotFound reports a dropIndexes of an index that is not there.
func indexNotFound(err error) bool {
	var ce mongo.CommandError
	return errors.As(err, &ce) && ce.HasErrorCode(27) // IndexNotFound
}

// onlyDuplicates reports whether a bulk insert failed only because some
// documents were already there (a redelivered batch).
func onlyDuplicates(err error) bool {
	var bwe mongo.BulkWriteException
	if errors.As(err, &bwe) {
		if bwe.WriteConcernError != nil {
			return false
		}
		for _, we := range bwe.WriteErrors {
			if we.Code != 11000 {
				return false
			}
		}
		return true
	}
	return mongo.IsDuplicateKeyError(err)
}
