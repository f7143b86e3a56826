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
)

// Sizes of the in-memory delivery log of each webhook.
const (
	// RecentAttempts is how many attempts of each webhook the log keeps
	// (the logs endpoint's maximum limit).
	RecentAttempts = 100
	// HealthWindow is how many recent non-test attempts the success rate
	// covers.
	HealthWindow = 100
)

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
}

// NewAttemptLog returns an empty log.
func NewAttemptLog() *AttemptLog { return &AttemptLog{hooks: map[string]*hookLog{}} }

// Follow replays the attempts stream and follows it; it returns once the
// replay is complete.
func (l *AttemptLog) Follow(ctx context.Context, js jetstream.JetStream, log *slog.Logger) error {
	return followReplayed(ctx, js, events.WebhookAttemptsStream, []string{events.WebhookAttemptsAll}, false, func(rec eventstore.Record) {
		var a webhooksv1.DeliveryAttempt
		if err := proto.Unmarshal(rec.Data, &a); err != nil {
			log.Warn("attempt record undecodable", "seq", rec.Seq, "err", err)
			return
		}
		l.Add(&a)
	})
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
	h.recent = slices.Insert(h.recent, i, a)
	if len(h.recent) > RecentAttempts {
		h.recent = h.recent[len(h.recent)-RecentAttempts:]
	}
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

// Recent returns up to limit attempts of a webhook, newest first.
func (l *AttemptLog) Recent(webhookID string, limit int) []*webhooksv1.DeliveryAttempt {
	l.mu.RLock()
	defer l.mu.RUnlock()
	h := l.hooks[webhookID]
	if h == nil {
		return nil
	}
	out := make([]*webhooksv1.DeliveryAttempt, 0, min(limit, len(h.recent)))
	for i := len(h.recent) - 1; i >= 0 && len(out) < limit; i-- {
		out = append(out, h.recent[i])
	}
	return out
}

// Health is what the log knows of a webhook's recent deliveries.
type Health struct {
	Attempts            int     // in the window
	SuccessRate         float64 // 0..1; meaningless when Attempts is 0
	ConsecutiveFailures int
	LastSuccessUnixMs   int64
	LastFailureUnixMs   int64
	LastError           string
	LastResponseCode    int32
}

// Health summarises a webhook's recent non-test attempts.
func (l *AttemptLog) Health(webhookID string) Health {
	l.mu.RLock()
	defer l.mu.RUnlock()
	h := l.hooks[webhookID]
	if h == nil {
		return Health{}
	}
	ok := 0
	for _, s := range h.outcomes {
		if s {
			ok++
		}
	}
	out := Health{
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
}

// StoreAttempts copies every attempt record into coll (the durable
// delivery log, kept beyond the stream's retention) through the durable
// consumer "webhooks-attempts-store", in batches: one InsertMany per
// fetch, then one ack for the batch. It runs until ctx ends.
func StoreAttempts(ctx context.Context, js jetstream.JetStream, coll *mongo.Collection, log *slog.Logger) error {
	if err := mongox.EnsureIndexes(ctx, coll,
		mongo.IndexModel{Keys: bson.D{{Key: "webhook_id", Value: 1}, {Key: "at_unix_ms", Value: -1}}},
		mongo.IndexModel{Keys: bson.D{{Key: "event_id", Value: 1}}},
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
				docs = append(docs, attemptDoc{
					ID: a.GetAttemptId(), EventID: a.GetEventId(), WorkspaceID: a.GetWorkspaceId(), WebhookID: a.GetWebhookId(),
					Event: a.GetEvent(), AtUnixMs: a.GetAtUnixMs(), Success: a.GetSuccess(), ResponseCode: a.GetResponseCode(),
					DurationMs: a.GetDurationMs(), RetryCount: a.GetRetryCount(), Error: a.GetError(), Final: a.GetFinal(), Test: a.GetTest(),
				})
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
