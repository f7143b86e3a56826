package adapters

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/consume"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/mongox"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// AttemptPages is app.DeliveryHistory in Mongo: the durable delivery
// log, every attempt, beyond what the stream and memory keep. It stores
// a webhook's attempts a page at a time (up to a batch of the attempts
// stream, as one DeliveryAttemptPage), so keeping every attempt costs a
// store write per page, not per attempt: on the embedded store a write
// costs about 100 µs of CPU whatever its size, a fifth of a delivery's
// whole budget at 5,000 deliveries a second on two cores.
//
// A page is two documents: a small one in Pages (the webhook, the time
// its attempts span, the delivery ids of the first attempts in it), which
// queries select and sort, and its attempts in Bodies, read by id. The
// embedded store answers a query on any field but _id by reading every
// document of the collection, and sorts in memory: the attempts, request
// bodies and all, stay out of that read.
type AttemptPages struct {
	Pages  *mongo.Collection
	Bodies *mongo.Collection
	// Legacy holds attempts one document each, as versions before pages
	// stored them; nil when there are none. It is read after the pages,
	// and written no more.
	Legacy *mongo.Collection
}

// Bounds of a page: a stream batch (the copy's MaxBatch) and, whatever
// the request bodies weigh, well under a document's 16 MiB.
const (
	maxPageAttempts = 500
	maxPageBytes    = 4 << 20
)

// pageDoc is a page as queries select it.
type pageDoc struct {
	ID        string `bson:"_id"`
	WebhookID string `bson:"webhook_id"`
	FirstMs   int64  `bson:"first_ms"`
	LastMs    int64  `bson:"last_ms"`
	// Deliveries are app.DeliveryID of the page's first attempts (the
	// ones that keep the request body a resend sends again).
	Deliveries []string `bson:"deliveries,omitempty"`
}

// pageBody is a page's attempts.
type pageBody struct {
	ID       string `bson:"_id"`
	Attempts []byte `bson:"attempts"` // a DeliveryAttemptPage
}

// OpenAttemptPages opens the delivery log in db, making its indexes.
func OpenAttemptPages(ctx context.Context, db *mongo.Database) (*AttemptPages, error) {
	p := &AttemptPages{Pages: db.Collection("attempt_pages"), Bodies: db.Collection("attempt_page_bodies")}
	if err := mongox.EnsureIndexes(ctx, p.Pages,
		mongo.IndexModel{Keys: bson.D{{Key: "webhook_id", Value: 1}, {Key: "last_ms", Value: -1}}},
		mongo.IndexModel{Keys: bson.D{{Key: "webhook_id", Value: 1}, {Key: "deliveries", Value: 1}}},
	); err != nil {
		return nil, err
	}
	legacy := db.Collection("attempts")
	err := legacy.FindOne(ctx, bson.D{}, options.FindOne().SetProjection(bson.D{{Key: "_id", Value: 1}})).Err()
	switch {
	case err == nil:
		p.Legacy = legacy
	case !errors.Is(err, mongo.ErrNoDocuments):
		return nil, err
	}
	return p, nil
}

// Store makes a batch of attempts durable: each webhook's as pages,
// oldest first. A page's id is its attempts' ids hashed, so a batch
// stored again (a redelivery) stores nothing new, and one cut at other
// bounds stores pages that repeat attempts, which reads list once.
func (p *AttemptPages) Store(ctx context.Context, batch []*webhooksv1.DeliveryAttempt) error {
	var pages []any
	var bodies []any
	for _, run := range pagesOf(batch) {
		data, err := proto.Marshal(&webhooksv1.DeliveryAttemptPage{Attempts: run})
		if err != nil {
			return err
		}
		ids := make([]string, len(run))
		doc := pageDoc{WebhookID: run[0].GetWebhookId(), FirstMs: run[0].GetAtUnixMs(), LastMs: run[len(run)-1].GetAtUnixMs()}
		for i, a := range run {
			ids[i] = a.GetAttemptId()
			if a.GetRetryCount() == 0 {
				doc.Deliveries = append(doc.Deliveries, app.DeliveryID(a))
			}
		}
		doc.ID = esproto.StableID("attempt-page", strings.Join(ids, "\x00"))
		pages = append(pages, doc)
		bodies = append(bodies, pageBody{ID: doc.ID, Attempts: data})
	}
	if len(pages) == 0 {
		return nil
	}
	// Bodies first: a page that queries find has its attempts.
	for _, w := range []struct {
		coll *mongo.Collection
		docs []any
	}{{p.Bodies, bodies}, {p.Pages, pages}} {
		if _, err := w.coll.InsertMany(ctx, w.docs, options.InsertMany().SetOrdered(false)); err != nil && !onlyDuplicates(err) {
			return err
		}
	}
	return nil
}

// pagesOf groups a batch by webhook, in time order, and cuts each group
// into pages within the bounds.
func pagesOf(batch []*webhooksv1.DeliveryAttempt) [][]*webhooksv1.DeliveryAttempt {
	byHook := map[string][]*webhooksv1.DeliveryAttempt{}
	var order []string
	for _, a := range batch {
		id := a.GetWebhookId()
		if _, ok := byHook[id]; !ok {
			order = append(order, id)
		}
		byHook[id] = append(byHook[id], a)
	}
	var out [][]*webhooksv1.DeliveryAttempt
	for _, id := range order {
		run := byHook[id]
		slices.SortStableFunc(run, func(a, b *webhooksv1.DeliveryAttempt) int { return app.NewestFirst(b, a) })
		start, size := 0, 0
		for i, a := range run {
			n := proto.Size(a)
			if i > start && (i-start == maxPageAttempts || size+n > maxPageBytes) {
				out = append(out, run[start:i])
				start, size = i, 0
			}
			size += n
		}
		out = append(out, run[start:])
	}
	return out
}

// Older returns up to limit attempts of a webhook that f selects, made
// before beforeMs (0: any time), newest first.
func (p *AttemptPages) Older(ctx context.Context, webhookID string, f domain.LogFilter, beforeMs int64, limit int) ([]*webhooksv1.DeliveryAttempt, error) {
	if limit <= 0 {
		return nil, nil
	}
	filter := bson.D{{Key: "webhook_id", Value: webhookID}}
	to := f.ToMs
	if beforeMs != 0 && (to == 0 || beforeMs < to) {
		to = beforeMs
	}
	if to != 0 {
		filter = append(filter, bson.E{Key: "first_ms", Value: bson.D{{Key: "$lt", Value: to}}})
	}
	if f.FromMs != 0 {
		filter = append(filter, bson.E{Key: "last_ms", Value: bson.D{{Key: "$gte", Value: f.FromMs}}})
	}
	cur, err := p.Pages.Find(ctx, filter, options.Find().
		SetSort(bson.D{{Key: "last_ms", Value: -1}}).SetProjection(bson.D{{Key: "deliveries", Value: 0}}))
	if err != nil {
		return nil, err
	}
	defer cur.Close(ctx)
	// An attempt is listed once, though stored in more than one page.
	listed := map[string]bool{}
	selects := func(a *webhooksv1.DeliveryAttempt) bool {
		if listed[a.GetAttemptId()] || beforeMs != 0 && a.GetAtUnixMs() >= beforeMs || !f.Matches(a.GetEvent(), a.GetSuccess(), a.GetAtUnixMs()) {
			return false
		}
		listed[a.GetAttemptId()] = true
		return true
	}
	var out []*webhooksv1.DeliveryAttempt
	for cur.Next(ctx) {
		var d pageDoc
		if err := cur.Decode(&d); err != nil {
			return nil, err
		}
		// Pages are in order of their newest attempt: once one's newest
		// is older than the oldest of a full list, no page after it
		// holds an attempt the list lacks.
		if len(out) == limit && d.LastMs < out[limit-1].GetAtUnixMs() {
			break
		}
		page, err := p.body(ctx, d.ID)
		if err != nil {
			return nil, err
		}
		out = merge(out, page, selects, limit)
	}
	if err := cur.Err(); err != nil {
		return nil, err
	}
	if p.Legacy == nil {
		return out, nil
	}
	legacy, err := legacyOlder(ctx, p.Legacy, webhookID, f, beforeMs, limit)
	if err != nil {
		return nil, err
	}
	return merge(out, legacy, selects, limit), nil
}

// merge adds the attempts of more that selects takes to list (newest
// first, at most limit).
func merge(list, more []*webhooksv1.DeliveryAttempt, selects func(*webhooksv1.DeliveryAttempt) bool, limit int) []*webhooksv1.DeliveryAttempt {
	for _, a := range more {
		if selects(a) {
			list = append(list, a)
		}
	}
	slices.SortFunc(list, app.NewestFirst)
	return list[:min(len(list), limit)]
}

// FirstAttempt returns the first attempt of a delivery of a webhook (the
// one that keeps the request body), or nil.
func (p *AttemptPages) FirstAttempt(ctx context.Context, webhookID, deliveryID string) (*webhooksv1.DeliveryAttempt, error) {
	cur, err := p.Pages.Find(ctx, bson.D{{Key: "webhook_id", Value: webhookID}, {Key: "deliveries", Value: deliveryID}},
		options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}).SetLimit(4))
	if err != nil {
		return nil, err
	}
	var docs []pageDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, err
	}
	for _, d := range docs {
		page, err := p.body(ctx, d.ID)
		if err != nil {
			return nil, err
		}
		for _, a := range page {
			if a.GetRetryCount() == 0 && app.DeliveryID(a) == deliveryID {
				return a, nil
			}
		}
	}
	if p.Legacy == nil {
		return nil, nil
	}
	return legacyFirstAttempt(ctx, p.Legacy, webhookID, deliveryID)
}

// body returns the attempts of page id (none if it is gone).
func (p *AttemptPages) body(ctx context.Context, id string) ([]*webhooksv1.DeliveryAttempt, error) {
	var b pageBody
	err := p.Bodies.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&b)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return b.attempts()
}

func (b pageBody) attempts() ([]*webhooksv1.DeliveryAttempt, error) {
	var page webhooksv1.DeliveryAttemptPage
	if err := proto.Unmarshal(b.Attempts, &page); err != nil {
		return nil, fmt.Errorf("attempt page %s: %w", b.ID, err)
	}
	return page.GetAttempts(), nil
}

// Each hands f every attempt the pages hold, page after page (an attempt
// stored in two pages, twice): for tools that check the whole log.
func (p *AttemptPages) Each(ctx context.Context, f func(*webhooksv1.DeliveryAttempt)) error {
	cur, err := p.Bodies.Find(ctx, bson.D{})
	if err != nil {
		return err
	}
	defer cur.Close(ctx)
	for cur.Next(ctx) {
		var b pageBody
		if err := cur.Decode(&b); err != nil {
			return err
		}
		as, err := b.attempts()
		if err != nil {
			return err
		}
		for _, a := range as {
			f(a)
		}
	}
	return cur.Err()
}

// AttemptsStoreDurable is the consumer of WEBHOOK_ATTEMPTS_LOG that
// copies attempts into the pages.
const AttemptsStoreDurable = "webhooks-attempt-pages"

// replacedStoreDurables copied WEBHOOK_ATTEMPTS itself one document an
// attempt (the first with ack-all, which a consumer cannot change in
// place); a copy behind by more than the stream keeps of a webhook lost
// attempts. WEBHOOK_ATTEMPTS_LOG sources the stream from its start, so
// the pages get every attempt it holds again, each listed once.
var replacedStoreDurables = []string{"webhooks-attempts-store", "webhooks-attempts-mongo"}

// StoreAttempts copies every attempt record into p through the durable
// consumer AttemptsStoreDurable of the work queue WEBHOOK_ATTEMPTS_LOG,
// a batch at a time: its pages written, then the batch acknowledged,
// which takes it off the queue (redelivered with back-off when the write
// fails), until ctx ends.
func StoreAttempts(ctx context.Context, js jetstream.JetStream, p *AttemptPages, log *slog.Logger) {
	for _, name := range replacedStoreDurables {
		if err := js.DeleteConsumer(ctx, events.WebhookAttemptsStream, name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			log.Warn("a replaced attempts consumer is left behind", "consumer", name, "err", err)
		}
	}
	spec := consume.Spec{
		Stream: events.WebhookAttemptsLogStream, Durable: AttemptsStoreDurable, FilterSubjects: []string{events.WebhookAttemptsAll},
		AckWait: time.Minute, MaxBatch: maxPageAttempts, MaxAckPending: 10000, Linger: 100 * time.Millisecond,
		OnError: func(_ []jetstream.Msg, err error) { log.Warn("attempt log write failed; will retry", "err", err) },
	}
	go func() {
		if err := consume.Batches(ctx, js, spec, func(ctx context.Context, batch []jetstream.Msg) error {
			attempts := make([]*webhooksv1.DeliveryAttempt, 0, len(batch))
			for _, m := range batch {
				a := new(webhooksv1.DeliveryAttempt)
				if proto.Unmarshal(m.Data(), a) == nil { // an undecodable record is skipped
					attempts = append(attempts, a)
				}
			}
			return p.Store(ctx, attempts)
		}); err != nil {
			log.Error("attempts are not copied to the durable log", "err", err)
		}
	}()
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
