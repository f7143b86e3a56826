package adapters

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/mongox"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// Sizes of the in-memory delivery log of each webhook.
const (
	// RecentAttempts is how many attempts of each webhook the log keeps
	// (the logs endpoint's maximum limit).
	RecentAttempts = app.MaxLogLimit
	// HealthWindow is how many recent non-test attempts the success rate
	// covers.
	HealthWindow = 100
)

// StreamAttemptLog is app.AttemptLog on the WEBHOOK_ATTEMPTS stream:
// Record adds the attempt to the in-memory log and publishes it, and the
// log follows the stream for the attempts other processes record.
type StreamAttemptLog struct {
	*AttemptLog
	JS jetstream.JetStream
}

// Record adds a to the log and publishes it, without waiting for the
// stream's answer.
func (l StreamAttemptLog) Record(_ context.Context, a *webhooksv1.DeliveryAttempt) error {
	l.Add(a)
	_, err := PublishAttempt(l.JS, a)
	return err
}

// PublishAttempt records an attempt on the WEBHOOK_ATTEMPTS stream,
// deduplicated by attempt id. It does not wait for the stream's answer.
func PublishAttempt(js jetstream.JetStream, a *webhooksv1.DeliveryAttempt) (jetstream.PubAckFuture, error) {
	subject, err := events.WebhookAttemptSubject(a.GetWorkspaceId(), a.GetWebhookId())
	if err != nil {
		return nil, err
	}
	data, err := proto.Marshal(a)
	if err != nil {
		return nil, err
	}
	msg := nats.NewMsg(subject)
	msg.Data = data
	msg.Header.Set(events.HeaderWorkspaceID, a.GetWorkspaceId())
	msg.Header.Set(events.HeaderEventID, a.GetEventId())
	return js.PublishMsgAsync(msg, jetstream.WithMsgID(a.GetAttemptId()))
}

// BodyBudget bounds the request bodies the in-memory log keeps per
// webhook; older bodies are read from the durable log when needed.
const BodyBudget = 1 << 20

type hookLog struct {
	recent      []*webhooksv1.DeliveryAttempt // oldest first, at most RecentAttempts
	outcomes    []bool                        // recent non-test attempts, oldest first
	consecutive int
	lastSuccess int64 // unix ms
	lastFailure int64
	lastError   string
	lastCode    int32
}

// AttemptLog is every webhook's recent delivery attempts and health,
// kept in memory and fed by the WEBHOOK_ATTEMPTS stream (which keeps the
// newest AttemptsPerWebhook attempts of each webhook, so a restart
// rebuilds it).
type AttemptLog struct {
	mu    sync.RWMutex
	hooks map[string]*hookLog
	// runs are the deliveries that failed for good, in a row (what the
	// auto-disable rule counts).
	runs *RunLog
}

// NewAttemptLog returns an empty log.
func NewAttemptLog() *AttemptLog { return &AttemptLog{hooks: map[string]*hookLog{}, runs: NewRunLog()} }

// Follow replays the attempts stream and follows it; it returns once the
// replay is complete.
func (l *AttemptLog) Follow(ctx context.Context, js jetstream.JetStream, log *slog.Logger) error {
	return FollowAttempts(ctx, js, log, l.Add)
}

// Run is a webhook's run of deliveries that failed for good, counted from
// enabledAt, and its latest failure.
func (l *AttemptLog) Run(webhookID string, enabledAt time.Time) domain.Run {
	return l.runs.Run(webhookID, enabledAt)
}

// Add records an attempt (a second copy of the same attempt is ignored).
func (l *AttemptLog) Add(a *webhooksv1.DeliveryAttempt) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.hooks[a.GetWebhookId()]
	if h == nil {
		h = &hookLog{}
		l.hooks[a.GetWebhookId()] = h
	}
	if slices.ContainsFunc(h.recent, func(x *webhooksv1.DeliveryAttempt) bool { return x.GetAttemptId() == a.GetAttemptId() }) {
		return
	}
	// Keep the list in time order even when a record arrives late.
	i := len(h.recent)
	for i > 0 && h.recent[i-1].GetAtUnixMs() > a.GetAtUnixMs() {
		i--
	}
	l.runs.Observe(a)
	h.recent = slices.Insert(h.recent, i, a)
	if len(h.recent) > RecentAttempts {
		h.recent = h.recent[len(h.recent)-RecentAttempts:]
	}
	h.keepBodies()
	if a.GetTest() {
		return
	}
	h.outcomes = append(h.outcomes, a.GetSuccess())
	if len(h.outcomes) > HealthWindow {
		h.outcomes = h.outcomes[len(h.outcomes)-HealthWindow:]
	}
	if a.GetSuccess() {
		h.consecutive = 0
		h.lastSuccess = max(h.lastSuccess, a.GetAtUnixMs())
	} else {
		h.consecutive++
		if a.GetAtUnixMs() >= h.lastFailure {
			h.lastFailure, h.lastError, h.lastCode = a.GetAtUnixMs(), a.GetError(), a.GetResponseCode()
		}
	}
}

// Record adds a: the in-memory log is app.AttemptLog on its own, for
// tests.
func (l *AttemptLog) Record(_ context.Context, a *webhooksv1.DeliveryAttempt) error {
	l.Add(a)
	return nil
}

// keepBodies drops the request bodies of the oldest attempts beyond
// BodyBudget (the attempts stay).
func (h *hookLog) keepBodies() {
	total := 0
	for i := len(h.recent) - 1; i >= 0; i-- {
		a := h.recent[i]
		if total += len(a.GetRequestBody()); total > BodyBudget && a.RequestBody != nil {
			a.RequestBody = nil
		}
	}
}

// Recent returns up to limit attempts of a webhook that f selects, newest
// first, and when the oldest attempt the memory holds was made (0 when
// it holds none): every later attempt is in memory, earlier ones only in
// the durable log.
func (l *AttemptLog) Recent(webhookID string, f domain.LogFilter, limit int) (out []*webhooksv1.DeliveryAttempt, oldestMs int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	h := l.hooks[webhookID]
	if h == nil || len(h.recent) == 0 {
		return nil, 0
	}
	for i := len(h.recent) - 1; i >= 0 && len(out) < limit; i-- {
		if a := h.recent[i]; f.Matches(a.GetEvent(), a.GetSuccess(), a.GetAtUnixMs()) {
			out = append(out, a)
		}
	}
	return out, h.recent[0].GetAtUnixMs()
}

// Find returns the newest attempt of a webhook that pred selects, if the
// log still holds one.
func (l *AttemptLog) Find(webhookID string, pred func(*webhooksv1.DeliveryAttempt) bool) *webhooksv1.DeliveryAttempt {
	l.mu.RLock()
	defer l.mu.RUnlock()
	h := l.hooks[webhookID]
	if h == nil {
		return nil
	}
	for i := len(h.recent) - 1; i >= 0; i-- {
		if pred(h.recent[i]) {
			return h.recent[i]
		}
	}
	return nil
}

// Health summarises a webhook's recent non-test attempts.
func (l *AttemptLog) Health(webhookID string) domain.Health {
	l.mu.RLock()
	defer l.mu.RUnlock()
	h := l.hooks[webhookID]
	if h == nil {
		return domain.Health{}
	}
	ok := 0
	for _, s := range h.outcomes {
		if s {
			ok++
		}
	}
	out := domain.Health{
		Attempts: len(h.outcomes), ConsecutiveFailures: h.consecutive,
		LastSuccessUnixMs: h.lastSuccess, LastFailureUnixMs: h.lastFailure, LastError: h.lastError, LastResponseCode: h.lastCode,
	}
	if len(h.outcomes) > 0 {
		out.SuccessRate = float64(ok) / float64(len(h.outcomes))
	}
	return out
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

// StoreAttempts copies every attempt record into coll (the durable
// delivery log, kept beyond the stream's retention) through the durable
// consumer "webhooks-attempts-store", in batches: one InsertMany per
// fetch, then one ack for the batch. It runs until ctx ends.
func StoreAttempts(ctx context.Context, js jetstream.JetStream, coll *mongo.Collection, log *slog.Logger) error {
	if err := mongox.EnsureIndexes(ctx, coll,
		mongo.IndexModel{Keys: bson.D{{Key: "webhook_id", Value: 1}, {Key: "at_unix_ms", Value: -1}}},
		mongo.IndexModel{Keys: bson.D{{Key: "event_id", Value: 1}}},
		mongo.IndexModel{Keys: bson.D{{Key: "webhook_id", Value: 1}, {Key: "delivery_id", Value: 1}}},
	); err != nil {
		return err
	}
	cons, err := eventstore.EnsureConsumer(ctx, js, events.WebhookAttemptsStream, jetstream.ConsumerConfig{
		Durable:       "webhooks-attempts-store",
		FilterSubject: events.WebhookAttemptsAll,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckAllPolicy,
		AckWait:       time.Minute,
		MaxAckPending: 10000,
	})
	if err != nil {
		return err
	}
	go func() {
		for ctx.Err() == nil {
			batch, err := cons.Fetch(500, jetstream.FetchMaxWait(2*time.Second))
			if err != nil {
				if ctx.Err() == nil && !errors.Is(err, context.Canceled) {
					log.Warn("attempt log fetch", "err", err)
					sleep(ctx, time.Second)
				}
				continue
			}
			var docs []any
			var last jetstream.Msg
			for m := range batch.Messages() {
				last = m
				var a webhooksv1.DeliveryAttempt
				if proto.Unmarshal(m.Data(), &a) != nil {
					continue
				}
				docs = append(docs, docOf(&a))
			}
			if last == nil {
				continue
			}
			if len(docs) > 0 {
				_, err := coll.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
				if err != nil && !onlyDuplicates(err) {
					log.Warn("attempt log write failed; will retry", "err", err)
					_ = last.Nak()
					sleep(ctx, time.Second)
					continue
				}
			}
			_ = last.Ack()
		}
	}()
	return nil
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

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
