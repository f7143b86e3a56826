package adapters

import (
	"context"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"
)

// attemptDoc is one attempt of the delivery log as versions before pages
// stored it, a document each.
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

// upgrade moves into the index, once, the delivery logs of earlier
// versions, and drops them:
//   - attempt_pages, where queries found the pages (their bodies stay
//     where they are), read in time order;
//   - attempts, one document an attempt, which become pages.
//
// Each is read whole once, at the first start after the upgrade; later
// starts find neither (one listing of the database's collections). One
// stopped midway moves it all again at the next start; the pages it
// repeats are listed once.
func (p *AttemptPages) upgrade(ctx context.Context, db *mongo.Database) error {
	earlier, err := db.ListCollectionNames(ctx, bson.D{{Key: "name", Value: bson.D{{Key: "$in", Value: []string{"attempt_pages", "attempts"}}}}})
	if err != nil {
		return err
	}
	if slices.Contains(earlier, "attempt_pages") {
		if err := p.indexEarlierPages(ctx, db.Collection("attempt_pages")); err != nil {
			return err
		}
	}
	if slices.Contains(earlier, "attempts") {
		return p.pageEarlierAttempts(ctx, db.Collection("attempts"))
	}
	return nil
}

// indexEarlierPages puts in the index, in time order, the pages headers
// found by query, then drops headers.
func (p *AttemptPages) indexEarlierPages(ctx context.Context, headers *mongo.Collection) error {
	// Sorted whole, beyond MongoDB's 100 MB for a sort in memory.
	cur, err := headers.Find(ctx, bson.D{}, options.Find().SetAllowDiskUse(true).
		SetSort(bson.D{{Key: "last_ms", Value: 1}}).SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return err
	}
	defer cur.Close(ctx)
	err = eachBatch(ctx, cur, maxPageAttempts, func(cur *mongo.Cursor) (placed, bool, error) {
		var h struct {
			ID string `bson:"_id"`
		}
		if err := cur.Decode(&h); err != nil {
			return placed{}, false, err
		}
		page, err := p.body(ctx, h.ID)
		if err != nil || len(page) == 0 {
			return placed{}, false, err
		}
		return placed{page[0].GetWebhookId(), slotOf(h.ID, page)}, true, nil
	}, func(slots []placed) error { return p.index.add(ctx, slots) })
	if err != nil {
		return err
	}
	return headers.Drop(ctx)
}

// pageEarlierAttempts stores the attempts of legacy, a document each, as
// pages, in time order, then drops legacy.
func (p *AttemptPages) pageEarlierAttempts(ctx context.Context, legacy *mongo.Collection) error {
	cur, err := legacy.Find(ctx, bson.D{}, options.Find().SetAllowDiskUse(true).SetSort(bson.D{{Key: "at_unix_ms", Value: 1}}))
	if err != nil {
		return err
	}
	defer cur.Close(ctx)
	err = eachBatch(ctx, cur, maxPageAttempts, func(cur *mongo.Cursor) (*webhooksv1.DeliveryAttempt, bool, error) {
		var d attemptDoc
		if err := cur.Decode(&d); err != nil {
			return nil, false, err
		}
		return d.attempt(), true, nil
	}, func(batch []*webhooksv1.DeliveryAttempt) error { return p.Store(ctx, batch) })
	if err != nil {
		return err
	}
	return legacy.Drop(ctx)
}

// eachBatch hands flush what item makes of cur's documents (those it
// keeps), n at a time, the last batch as the cursor ends.
func eachBatch[T any](ctx context.Context, cur *mongo.Cursor, n int, item func(*mongo.Cursor) (T, bool, error), flush func([]T) error) error {
	batch := make([]T, 0, n)
	for cur.Next(ctx) {
		v, keep, err := item(cur)
		if err != nil {
			return err
		}
		if keep {
			batch = append(batch, v)
		}
		if len(batch) == n {
			if err := flush(batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if err := cur.Err(); err != nil {
		return err
	}
	if len(batch) == 0 {
		return nil
	}
	return flush(batch)
}
