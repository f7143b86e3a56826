package adapters

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	events "github.com/voiceai-platform/voiceai/proto-events"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/app/historytest"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

func TestAttemptPagesConform(t *testing.T) {
	open := testenv.OnFreshDatabases(t, "attempt_pages", OpenAttemptPages)
	historytest.Run(t, func(t *testing.T) (app.DeliveryHistory, func(...*webhooksv1.DeliveryAttempt)) {
		p := open(t)
		return p, func(batch ...*webhooksv1.DeliveryAttempt) {
			if err := p.Store(context.Background(), batch); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// An upgraded deployment reads the attempts earlier versions stored one
// document each after its pages, as one log: the first batch of every
// suite case goes to the legacy documents, the rest (which repeat some
// of it, as the pages' consumer copies the stream again) to pages.
func TestAttemptPagesOverLegacyDocumentsConform(t *testing.T) {
	open := testenv.OnFreshDatabases(t, "attempt_pages_legacy", func(ctx context.Context, db *mongo.Database) (*AttemptPages, error) {
		p, err := OpenAttemptPages(ctx, db)
		if err == nil {
			p.Legacy = db.Collection("attempts")
		}
		return p, err
	})
	historytest.Run(t, func(t *testing.T) (app.DeliveryHistory, func(...*webhooksv1.DeliveryAttempt)) {
		p := open(t)
		batches := 0
		return p, func(batch ...*webhooksv1.DeliveryAttempt) {
			batches++
			if batches == 1 {
				storeLegacy(t, p.Legacy, batch...)
				return
			}
			if err := p.Store(context.Background(), batch); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// storeLegacy writes attempts as versions before pages did.
func storeLegacy(t *testing.T, coll *mongo.Collection, as ...*webhooksv1.DeliveryAttempt) {
	t.Helper()
	docs := make([]any, len(as))
	for i, a := range as {
		docs[i] = attemptDoc{
			ID: a.GetAttemptId(), EventID: a.GetEventId(), WorkspaceID: a.GetWorkspaceId(), WebhookID: a.GetWebhookId(),
			Event: a.GetEvent(), AtUnixMs: a.GetAtUnixMs(), Success: a.GetSuccess(), ResponseCode: a.GetResponseCode(),
			DurationMs: a.GetDurationMs(), RetryCount: a.GetRetryCount(), Error: a.GetError(), Final: a.GetFinal(), Test: a.GetTest(),
			DeliveryID: app.DeliveryID(a), ResendID: a.GetResendId(), RequestBody: a.GetRequestBody(), ResponseBody: a.GetResponseBody(),
		}
	}
	if _, err := coll.InsertMany(context.Background(), docs, options.InsertMany().SetOrdered(false)); err != nil && !onlyDuplicates(err) {
		t.Fatal(err)
	}
}

// The legacy documents are read only where some are left.
func TestOpenAttemptPagesFindsLegacyDocuments(t *testing.T) {
	client := testenv.New(t).Mongo(t)
	ctx := context.Background()
	fresh, err := OpenAttemptPages(ctx, client.Database("attempt_pages_fresh"))
	if err != nil || fresh.Legacy != nil {
		t.Fatalf("a fresh log: legacy %v, %v", fresh.Legacy, err)
	}
	db := client.Database("attempt_pages_upgraded")
	storeLegacy(t, db.Collection("attempts"), &webhooksv1.DeliveryAttempt{AttemptId: "evt_1:whk_1:1", EventId: "evt_1", WebhookId: "whk_1", AtUnixMs: 1})
	upgraded, err := OpenAttemptPages(ctx, db)
	if err != nil || upgraded.Legacy == nil {
		t.Fatalf("an upgraded log: legacy %v, %v", upgraded.Legacy, err)
	}
	if got, err := upgraded.Older(ctx, "whk_1", domain.LogFilter{}, 0, 10); err != nil || len(got) != 1 {
		t.Fatalf("older: %v %v", got, err)
	}
}

// A batch is cut into pages of one webhook each, in time order, within
// the bounds of a page.
func TestPagesOf(t *testing.T) {
	hook := func(id string, n, bodyBytes int) []*webhooksv1.DeliveryAttempt {
		out := make([]*webhooksv1.DeliveryAttempt, n)
		for i := range out {
			out[i] = &webhooksv1.DeliveryAttempt{AttemptId: fmt.Sprintf("evt_%d:%s:1", i, id), WebhookId: id,
				AtUnixMs: int64(n - i), RequestBody: []byte(strings.Repeat("x", bodyBytes))}
		}
		return out
	}
	big := hook("whk_big", 3, maxPageBytes/2)
	batch := append(append(hook("whk_1", 1200, 10), big...), hook("whk_2", 2, 10)...)
	var shape []string
	for _, page := range pagesOf(batch) {
		shape = append(shape, fmt.Sprintf("%s×%d", page[0].GetWebhookId(), len(page)))
		if !slices.IsSortedFunc(page, func(a, b *webhooksv1.DeliveryAttempt) int { return app.NewestFirst(b, a) }) {
			t.Errorf("page of %s out of time order", page[0].GetWebhookId())
		}
		for _, a := range page {
			if a.GetWebhookId() != page[0].GetWebhookId() {
				t.Errorf("page of %s holds an attempt of %s", page[0].GetWebhookId(), a.GetWebhookId())
			}
		}
	}
	if want := []string{"whk_1×500", "whk_1×500", "whk_1×200", "whk_big×1", "whk_big×1", "whk_big×1", "whk_2×2"}; !slices.Equal(shape, want) {
		t.Errorf("pages %v; want %v", shape, want)
	}
}

// StoreAttempts copies every attempt record into the pages through the
// work queue WEBHOOK_ATTEMPTS_LOG, and removes the consumers it replaced.
// A copy that starts late loses nothing, though WEBHOOK_ATTEMPTS has let
// go of a webhook's oldest attempts meanwhile.
func TestStoreAttemptsCopiesEveryRecord(t *testing.T) {
	js := testenv.StreamsAt(t, EnsureStreams)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, name := range replacedStoreDurables {
		if _, err := js.CreateOrUpdateConsumer(ctx, events.WebhookAttemptsStream, jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			t.Fatal(err)
		}
	}
	p, err := OpenAttemptPages(ctx, testenv.New(t).Mongo(t).Database("attempt_pages_copy"))
	if err != nil {
		t.Fatal(err)
	}
	// The first 30 attempts reach the queue; then 1,000 more make the
	// stream let go of those 30, before the copy has started.
	var recorded []string
	record := func(from, to int) {
		for i := from; i < to; i++ {
			a := &webhooksv1.DeliveryAttempt{AttemptId: fmt.Sprintf("evt_%04d:whk_1:1", i), EventId: fmt.Sprintf("evt_%04d", i),
				WorkspaceId: "ws_a", WebhookId: "whk_1", Event: "call_started", AtUnixMs: int64(1000 + i), Success: true, Final: true}
			if err := (AttemptPublisher{JS: js}).RecordDurable(ctx, a); err != nil {
				t.Fatal(err)
			}
			recorded = append([]string{a.GetAttemptId()}, recorded...)
		}
	}
	queued := func() uint64 {
		str, err := js.Stream(ctx, events.WebhookAttemptsLogStream)
		if err != nil {
			return math.MaxUint64
		}
		return str.CachedInfo().State.Msgs
	}
	record(0, 30)
	testkit.Eventually(t, 10*time.Second, "the first 30 attempts on the queue", func() bool { return queued() == 30 })
	record(30, 30+AttemptsPerWebhook)
	str, err := js.Stream(ctx, events.WebhookAttemptsStream)
	if err != nil {
		t.Fatal(err)
	}
	if held := str.CachedInfo().State.Msgs; held != AttemptsPerWebhook {
		t.Fatalf("WEBHOOK_ATTEMPTS holds %d records; want the newest %d", held, AttemptsPerWebhook)
	}
	StoreAttempts(ctx, js, p, slog.New(slog.DiscardHandler))
	var held []string
	testkit.Eventually(t, 15*time.Second, "every attempt in the pages", func() bool {
		held = nil
		before := int64(0)
		for {
			page, err := p.Older(ctx, "whk_1", domain.LogFilter{}, before, 100)
			if err != nil || len(page) == 0 {
				break
			}
			held = append(held, historyIDs(page)...)
			before = page[len(page)-1].GetAtUnixMs()
		}
		return slices.Equal(held, recorded)
	})
	for _, name := range replacedStoreDurables {
		if _, err := js.Consumer(ctx, events.WebhookAttemptsStream, name); err == nil {
			t.Errorf("consumer %s left behind", name)
		}
	}
	testkit.Eventually(t, 5*time.Second, "the copied records off the queue", func() bool { return queued() == 0 })
}

func historyIDs(as []*webhooksv1.DeliveryAttempt) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.GetAttemptId()
	}
	return out
}
