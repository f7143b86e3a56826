package adapters

import (
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// attemptDoc is one attempt of the delivery log as versions before
// AttemptPages stored it, a document each.
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

func (d attemptDoc) attempt() *webhooksv1.DeliveryAttempt {
	return &webhooksv1.DeliveryAttempt{
		AttemptId: d.ID, EventId: d.EventID, WorkspaceId: d.WorkspaceID, WebhookId: d.WebhookID, Event: d.Event,
		AtUnixMs: d.AtUnixMs, Success: d.Success, ResponseCode: d.ResponseCode, DurationMs: d.DurationMs, RetryCount: d.RetryCount,
		Error: d.Error, Final: d.Final, Test: d.Test, ResendId: d.ResendID, RequestBody: d.RequestBody, ResponseBody: d.ResponseBody,
	}
}

// legacyOlder is AttemptPages.Older over the legacy documents.
func legacyOlder(ctx context.Context, coll *mongo.Collection, webhookID string, f domain.LogFilter, beforeMs int64, limit int) ([]*webhooksv1.DeliveryAttempt, error) {
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
	cur, err := coll.Find(ctx, filter, options.Find().SetSort(bson.D{{Key: "at_unix_ms", Value: -1}}).SetLimit(int64(limit)))
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

// legacyFirstAttempt is AttemptPages.FirstAttempt over the legacy
// documents.
func legacyFirstAttempt(ctx context.Context, coll *mongo.Collection, webhookID, deliveryID string) (*webhooksv1.DeliveryAttempt, error) {
	var d attemptDoc
	err := coll.FindOne(ctx, bson.D{{Key: "webhook_id", Value: webhookID}, {Key: "delivery_id", Value: deliveryID}, {Key: "retry_count", Value: 0}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return d.attempt(), nil
}
