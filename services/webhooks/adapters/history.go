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
	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/consume"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/mongox"
	"github.com/voiceai-platform/voiceai/pkg/tick"
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
// Pages are read by id only: each webhook's are found through its
// pageIndex, which summarises them (time, events, outcomes, deliveries),
// so a read skips what cannot hold what it looks for.
type AttemptPages struct {
	Bodies *mongo.Collection // the pages, by id
	index  *pageIndex
	kept   *keptPages // pages read lately
}

// Bounds of a page: a stream batch (the copy's MaxBatch) and, whatever
// the request bodies weigh, well under a document's 16 MiB.
const (
	maxPageAttempts = 500
	maxPageBytes    = 4 << 20
)

// pageBody is a page's attempts.
type pageBody struct {
	ID       string `bson:"_id"`
	Attempts []byte `bson:"attempts"` // a DeliveryAttemptPage
}

// OpenAttemptPages opens the delivery log in db, moving into it what
// earlier versions stored (see upgrade).
func OpenAttemptPages(ctx context.Context, db *mongo.Database) (*AttemptPages, error) {
	p := &AttemptPages{Bodies: db.Collection("attempt_page_bodies"), index: newPageIndex(db.Collection("attempt_page_index")), kept: newKeptPages(pageBytesKept)}
	if err := p.upgrade(ctx, db); err != nil {
		return nil, fmt.Errorf("delivery log: %w", err)
	}
	return p, nil
}

// Store makes a batch of attempts durable: each webhook's as pages,
// oldest first. A page's id is its attempts' ids hashed, so a batch
// stored again (a redelivery) stores no new page, and one cut at other
// bounds stores pages that repeat attempts; reads list each attempt once.
func (p *AttemptPages) Store(ctx context.Context, batch []*webhooksv1.DeliveryAttempt) error {
	runs := pagesOf(batch)
	if len(runs) == 0 {
		return nil
	}
	bodies := make([]any, len(runs))
	slots := make([]placed, len(runs))
	for i, run := range runs {
		data, err := proto.Marshal(&webhooksv1.DeliveryAttemptPage{Attempts: run})
		if err != nil {
			return err
		}
		ids := make([]string, len(run))
		for j, a := range run {
			ids[j] = a.GetAttemptId()
		}
		id := esproto.StableID("attempt-page", strings.Join(ids, "\x00"))
		bodies[i], slots[i] = pageBody{ID: id, Attempts: data}, placed{run[0].GetWebhookId(), slotOf(id, run)}
	}
	// Bodies first: a page the index finds has its attempts. A page
	// stored again takes a slot again (its first slot may have been
	// taken just before a crash, or not): reads list its attempts once.
	if _, err := mongox.InsertNew(ctx, p.Bodies, bodies); err != nil {
		return err
	}
	return p.index.add(ctx, slots)
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

// Older returns up to limit attempts of a webhook that f selects, below
// position before (nil: from the newest), newest first.
func (p *AttemptPages) Older(ctx context.Context, webhookID string, f domain.LogFilter, before *app.LogPosition, limit int) ([]*webhooksv1.DeliveryAttempt, error) {
	if limit <= 0 {
		return nil, nil
	}
	// An attempt is listed once, though stored in more than one page.
	listed := map[string]bool{}
	selects := func(a *webhooksv1.DeliveryAttempt) bool {
		if listed[a.GetAttemptId()] || before != nil && !before.Below(a) || !f.Matches(a.GetEvent(), a.GetSuccess(), a.GetAtUnixMs()) {
			return false
		}
		listed[a.GetAttemptId()] = true
		return true
	}
	var out []*webhooksv1.DeliveryAttempt
	err := p.index.walk(ctx, webhookID, walker{
		mayHold: selecting(f, before),
		// Full of attempts newer than any up to here: nothing older can
		// enter the list.
		doneAt: func(high int64) bool { return len(out) == limit && high < out[limit-1].GetAtUnixMs() },
		visit: func(slot indexDoc) (bool, error) {
			page, err := p.body(ctx, slot.Page)
			out = merge(out, page, selects, limit)
			return false, err
		},
	})
	return out, err
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
	var found *webhooksv1.DeliveryAttempt
	err := p.index.walk(ctx, webhookID, walker{
		filters: true,
		mayHold: holdingDelivery(deliveryID),
		doneAt:  func(int64) bool { return false },
		visit: func(slot indexDoc) (bool, error) {
			page, err := p.body(ctx, slot.Page)
			for _, a := range page {
				if app.FirstOf(a, deliveryID, found) {
					found = a
				}
			}
			// A first attempt ends the walk; a later one with the body
			// (the first was never recorded) leaves it looking further back.
			return found != nil && found.GetRetryCount() == 0, err
		},
	})
	return found, err
}

// body returns the attempts of page id (none if it is gone).
func (p *AttemptPages) body(ctx context.Context, id string) ([]*webhooksv1.DeliveryAttempt, error) {
	b := pageBody{ID: id}
	if kept, ok := p.kept.get(id); ok {
		b.Attempts = kept
		return b.attempts()
	}
	err := p.Bodies.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&b)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	p.kept.add(id, b.Attempts)
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

// AttemptsStoreAckWait is how long a batch of records handed to the copy
// waits for its acknowledgement before it is handed out again. It also
// bounds how late a record can reach the durable log after a NATS node
// is lost: a batch the lost node delivered that never reached the copy
// is handed out again only then. Short, because what the copy holds is
// said to be in hand while it holds it (package consume); at a minute,
// the delivery log lacked such records for as long.
const AttemptsStoreAckWait = 10 * time.Second

// replacedStoreDurables copied WEBHOOK_ATTEMPTS itself one document an
// attempt (the first with ack-all, which a consumer cannot change in
// place); a copy behind by more than the stream keeps of a webhook lost
// attempts. What they stored is moved into the pages at the first start
// (history_upgrade.go).
var replacedStoreDurables = []string{"webhooks-attempts-store", "webhooks-attempts-mongo"}

// StoreAttempts copies every attempt record into p through the durable
// consumer AttemptsStoreDurable of the work queue WEBHOOK_ATTEMPTS_LOG
// (the records published there, and those it sourced from
// WEBHOOK_ATTEMPTS before: events.WebhookAttemptsLogStream),
// a batch at a time: its pages written, then the batch acknowledged,
// which takes it off the queue (redelivered with back-off when the write
// fails), until ctx ends. While hold says why not (may be nil), nothing
// is stored.
func StoreAttempts(ctx context.Context, js jetstream.JetStream, p *AttemptPages, log *slog.Logger, hold func() error) {
	for _, name := range replacedStoreDurables {
		if err := js.DeleteConsumer(ctx, events.WebhookAttemptsStream, name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			log.Warn("a replaced attempts consumer is left behind", "consumer", name, "err", err)
		}
	}
	spec := consume.Spec{
		Stream: events.WebhookAttemptsLogStream, Durable: AttemptsStoreDurable, FilterSubjects: []string{events.WebhookAttemptsLogAll, events.WebhookAttemptsAll},
		AckWait: AttemptsStoreAckWait, MaxBatch: maxPageAttempts, MaxAckPending: 10000, Linger: 100 * time.Millisecond, Log: log, Hold: hold,
		OnError: func(_ []jetstream.Msg, err error) { log.Warn("attempt log write failed; will retry", "err", err) },
	}
	go tick.Restarting.Restart(ctx, func(ctx context.Context) error {
		return consume.Batches(ctx, js, spec, func(ctx context.Context, batch []jetstream.Msg) error {
			attempts := make([]*webhooksv1.DeliveryAttempt, 0, len(batch))
			for _, m := range batch {
				a := new(webhooksv1.DeliveryAttempt)
				if proto.Unmarshal(m.Data(), a) == nil { // an undecodable record is skipped
					attempts = append(attempts, a)
				}
			}
			return p.Store(ctx, attempts)
		})
	}, func(err error, again time.Duration) {
		log.Error("attempts are not copied to the durable log; starting the copy again", "err", err, "after", again)
	})
}
