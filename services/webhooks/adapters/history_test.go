package adapters

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"google.golang.org/protobuf/proto"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	events "github.com/voiceai-platform/voiceai/proto-events"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/app/historytest"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// The pages conform with whole batches stored at once, as the copy does,
// and with a page or two a store on an index of fanout 2, whose tree is
// many levels deep even over the suite's small logs.
func TestAttemptPagesConform(t *testing.T) {
	for _, c := range []struct {
		name   string
		fanout int64
		cut    int
	}{{"batches whole", defaultFanout, 0}, {"fanout 2, three attempts a store", 2, 3}} {
		t.Run(c.name, func(t *testing.T) {
			open := testenv.OnFreshDatabases(t, "attempt_pages", OpenAttemptPages)
			historytest.Run(t, func(t *testing.T) (app.DeliveryHistory, func(...*webhooksv1.DeliveryAttempt)) {
				p := open(t)
				p.index.fanout = c.fanout
				return p, func(batch ...*webhooksv1.DeliveryAttempt) {
					for len(batch) > 0 {
						n := len(batch)
						if c.cut > 0 {
							n = min(n, c.cut)
						}
						if err := p.Store(context.Background(), batch[:n]); err != nil {
							t.Fatal(err)
						}
						batch = batch[n:]
					}
				}
			})
		})
	}
}

// countedPages opens a delivery log in database db whose finds are
// counted.
func countedPages(t *testing.T, db string) (*AttemptPages, *lookups) {
	t.Helper()
	count := &lookups{}
	p, err := OpenAttemptPages(context.Background(), count.client(t, testenv.New(t).MongoURI).Database(db))
	if err != nil {
		t.Fatal(err)
	}
	return p, count
}

// lookups counts the documents a store client's finds ask for.
type lookups struct{ n atomic.Int64 }

func (l *lookups) client(t *testing.T, uri string) *mongo.Client {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI(uri).SetMonitor(&event.CommandMonitor{
		Started: func(_ context.Context, e *event.CommandStartedEvent) {
			if e.CommandName == "find" {
				l.n.Add(1)
			}
		},
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c
}

// A read costs the page it answers, not the log: with 3,000 pages of 20
// webhooks stored, the newest attempts, the next page back, a rare
// outcome and an old delivery's first attempt each take a few dozen
// lookups by id.
func TestAttemptPagesReadsCostThePage(t *testing.T) {
	ctx := context.Background()
	p, count := countedPages(t, "attempt_pages_cost")
	const hooks, n = 20, 6000
	var all []*webhooksv1.DeliveryAttempt
	for i := range n {
		all = append(all, &webhooksv1.DeliveryAttempt{AttemptId: fmt.Sprintf("evt_%05d:whk_%d:1", i, i%hooks), EventId: fmt.Sprintf("evt_%05d", i),
			WebhookId: fmt.Sprintf("whk_%d", i%hooks), Event: "call_ended", AtUnixMs: int64(1_000_000 + i), Success: i != 40, Final: true})
	}
	for i := 0; i < n; i += 2 * hooks { // two attempts a webhook a page
		if err := p.Store(ctx, all[i:i+2*hooks]); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		read func() (int, error)
		want int
		most int64
	}{
		{"the newest 50", func() (int, error) {
			got, err := p.Older(ctx, "whk_0", domain.LogFilter{}, nil, 50)
			return len(got), err
		}, 50, 60},
		{"50 from the middle back", func() (int, error) {
			got, err := p.Older(ctx, "whk_0", domain.LogFilter{}, &app.LogPosition{AtMs: 1_000_000 + n/2}, 50)
			return len(got), err
		}, 50, 80},
		{"the one failure", func() (int, error) {
			got, err := p.Older(ctx, "whk_0", domain.LogFilter{Status: domain.LogFailed}, nil, 50)
			return len(got), err
		}, 1, 40},
		{"the oldest delivery's first attempt", func() (int, error) {
			got, err := p.FirstAttempt(ctx, "whk_0", app.DeliveryID(all[0]))
			if got == nil {
				return 0, err
			}
			return 1, err
		}, 1, 40},
	} {
		before := count.n.Load()
		got, err := c.read()
		asked := count.n.Load() - before
		if err != nil || got != c.want {
			t.Errorf("%s: %d attempts, %v; want %d", c.name, got, err, c.want)
		}
		if asked > c.most {
			t.Errorf("%s: %d lookups; want at most %d", c.name, asked, c.most)
		}
		t.Logf("%s: %d lookups", c.name, asked)
	}
}

// A reader paging back through a long log, 50 attempts a read, reads each
// stored page and each slot and node of the index from the store once,
// however many of its reads fall in one stored page or walk past the same
// newest slots: plus one lookup a read for where the log ends. It lists
// every attempt once, newest first.
func TestAPagingReaderReadsEachPageOnce(t *testing.T) {
	ctx := context.Background()
	p, count := countedPages(t, "attempt_pages_paging")
	const pages, perPage, limit = 40, 150, 50
	for pg := range pages {
		batch := make([]*webhooksv1.DeliveryAttempt, perPage)
		for j := range batch {
			i := pg*perPage + j
			batch[j] = &webhooksv1.DeliveryAttempt{AttemptId: fmt.Sprintf("evt_%05d:whk_0:1", i), EventId: fmt.Sprintf("evt_%05d", i),
				WebhookId: "whk_0", Event: "call_ended", AtUnixMs: int64(1_000_000 + i), Success: true, Final: true}
		}
		if err := p.Store(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	before, reads, next := count.n.Load(), 0, int64(1_000_000+pages*perPage-1)
	var position *app.LogPosition
	for {
		got, err := p.Older(ctx, "whk_0", domain.LogFilter{}, position, limit)
		if err != nil {
			t.Fatal(err)
		}
		reads++
		if len(got) == 0 {
			break
		}
		for _, a := range got {
			if a.GetAtUnixMs() != next {
				t.Fatalf("read %d: an attempt at %d, want %d (each once, newest first)", reads, a.GetAtUnixMs(), next)
			}
			next--
		}
		last := got[len(got)-1]
		position = &app.LogPosition{AtMs: last.GetAtUnixMs(), AttemptID: last.GetAttemptId()}
	}
	if next != 1_000_000-1 {
		t.Fatalf("the reads ended before the attempt at %d", next)
	}
	// 40 slots and two complete nodes of 16; each read also asks where
	// the log ends.
	asked, most := count.n.Load()-before, int64(pages+pages+2+reads)
	t.Logf("%d reads: %d lookups", reads, asked)
	if asked > most {
		t.Errorf("%d reads of %d stored pages: %d lookups; want at most %d", reads, pages, asked, most)
	}
}

// Writers of two replicas storing one webhook's pages at once each take
// slots of their own, and every attempt is listed once.
func TestAttemptPagesWritersShareTheIndex(t *testing.T) {
	open := testenv.OnFreshDatabases(t, "attempt_pages_shared", func(ctx context.Context, db *mongo.Database) ([2]*AttemptPages, error) {
		a, err := OpenAttemptPages(ctx, db)
		if err != nil {
			return [2]*AttemptPages{}, err
		}
		b, err := OpenAttemptPages(ctx, db)
		a.index.fanout, b.index.fanout = 3, 3
		return [2]*AttemptPages{a, b}, err
	})
	replicas := open(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	var all []*webhooksv1.DeliveryAttempt
	for r, p := range replicas {
		var mine []*webhooksv1.DeliveryAttempt
		for i := range 60 {
			mine = append(mine, &webhooksv1.DeliveryAttempt{AttemptId: fmt.Sprintf("evt_%d_%02d:whk_1:1", r, i), EventId: fmt.Sprintf("evt_%d_%02d", r, i),
				WebhookId: "whk_1", Event: "call_ended", AtUnixMs: int64(1000 + 2*i + r), Success: true, Final: true})
		}
		all = append(all, mine...)
		wg.Go(func() {
			for _, a := range mine {
				if err := p.Store(ctx, []*webhooksv1.DeliveryAttempt{a}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	slices.SortFunc(all, app.NewestFirst)
	for _, p := range replicas {
		got, err := p.Older(ctx, "whk_1", domain.LogFilter{}, nil, 1000)
		if err != nil || !slices.Equal(historyIDs(got), historyIDs(all)) {
			t.Fatalf("listed %d of %d attempts, %v", len(got), len(all), err)
		}
	}
	for s := range int64(len(all)) {
		if _, ok, err := replicas[0].index.get(ctx, indexID("whk_1", 0, s)); !ok || err != nil {
			t.Errorf("slot %d missing: %v", s, err)
		}
	}
}

// A node its writer died before inserting is read through its children,
// and made again by the writer that completes the node above it.
func TestAttemptPagesReadThroughAMissingNode(t *testing.T) {
	open := testenv.OnFreshDatabases(t, "attempt_pages_missing", OpenAttemptPages)
	p := open(t)
	p.index.fanout = 2
	ctx := context.Background()
	var all []*webhooksv1.DeliveryAttempt
	store := func(from, to int) {
		for i := from; i < to; i++ {
			a := &webhooksv1.DeliveryAttempt{AttemptId: fmt.Sprintf("evt_%02d:whk_1:1", i), EventId: fmt.Sprintf("evt_%02d", i),
				WebhookId: "whk_1", Event: "call_ended", AtUnixMs: int64(1000 + i), Success: i != 1, Final: true}
			all = append([]*webhooksv1.DeliveryAttempt{a}, all...)
			if err := p.Store(ctx, []*webhooksv1.DeliveryAttempt{a}); err != nil {
				t.Fatal(err)
			}
		}
	}
	store(0, 6) // slots 0-5; nodes 1/0, 1/1, 1/2, 2/0
	for _, id := range []string{indexID("whk_1", 1, 0), indexID("whk_1", 2, 0)} {
		if _, err := p.index.coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}}); err != nil {
			t.Fatal(err)
		}
	}
	p.index.slots, p.index.last = map[string]map[int64]indexDoc{}, map[string]taken{} // a writer started anew
	if got, err := p.Older(ctx, "whk_1", domain.LogFilter{Status: domain.LogFailed}, nil, 10); err != nil || len(got) != 1 || got[0].GetAttemptId() != "evt_01:whk_1:1" {
		t.Errorf("the failure under a missing node: %v %v", got, err)
	}
	if got, err := p.FirstAttempt(ctx, "whk_1", app.DeliveryID(all[len(all)-1])); err != nil || got == nil {
		t.Errorf("the first delivery under a missing node: %v %v", got, err)
	}
	store(6, 8) // slot 7 completes nodes 1/3, 2/1 and 3/0, over 2/0 and 1/0 made again
	for _, id := range []string{indexID("whk_1", 1, 0), indexID("whk_1", 2, 0), indexID("whk_1", 3, 0)} {
		if _, ok, err := p.index.get(ctx, id); !ok || err != nil {
			t.Errorf("node %s not there: %v", id, err)
		}
	}
	if got, err := p.Older(ctx, "whk_1", domain.LogFilter{}, nil, 100); err != nil || !slices.Equal(historyIDs(got), historyIDs(all)) {
		t.Errorf("listed %v, %v; want %v", historyIDs(got), err, historyIDs(all))
	}
}

// The logs of earlier versions, pages found by query and attempts a
// document each, are moved into the index at the first start, once.
func TestOpenAttemptPagesMovesEarlierLogs(t *testing.T) {
	client := testenv.New(t).Mongo(t)
	ctx := context.Background()
	db := client.Database("attempt_pages_upgraded")
	attempt := func(i int) *webhooksv1.DeliveryAttempt {
		return &webhooksv1.DeliveryAttempt{AttemptId: fmt.Sprintf("evt_%02d:whk_1:1", i), EventId: fmt.Sprintf("evt_%02d", i),
			WebhookId: "whk_1", Event: "call_ended", AtUnixMs: int64(1000 + i), Success: true, Final: true, RequestBody: []byte("{}")}
	}
	var all []*webhooksv1.DeliveryAttempt
	for i := range 20 {
		all = append([]*webhooksv1.DeliveryAttempt{attempt(i)}, all...)
	}
	// Attempts 0-9, a document each; 10-19 in two pages found by query.
	storeLegacy(t, db.Collection("attempts"), all[10:]...)
	for _, page := range [][]*webhooksv1.DeliveryAttempt{all[5:10], all[:5]} {
		data, err := proto.Marshal(&webhooksv1.DeliveryAttemptPage{Attempts: page})
		if err != nil {
			t.Fatal(err)
		}
		id := page[0].GetAttemptId()
		if _, err := db.Collection("attempt_page_bodies").InsertOne(ctx, pageBody{ID: id, Attempts: data}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Collection("attempt_pages").InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "webhook_id", Value: "whk_1"},
			{Key: "first_ms", Value: page[len(page)-1].GetAtUnixMs()}, {Key: "last_ms", Value: page[0].GetAtUnixMs()}}); err != nil {
			t.Fatal(err)
		}
	}
	p, err := OpenAttemptPages(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := p.Older(ctx, "whk_1", domain.LogFilter{}, nil, 100); err != nil || !slices.Equal(historyIDs(got), historyIDs(all)) {
		t.Errorf("listed %v, %v; want %v", historyIDs(got), err, historyIDs(all))
	}
	if got, err := p.FirstAttempt(ctx, "whk_1", app.DeliveryID(all[19])); err != nil || got.GetAttemptId() != all[19].GetAttemptId() {
		t.Errorf("a first attempt stored a document each: %v %v", got, err)
	}
	names, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(names, "attempts") || slices.Contains(names, "attempt_pages") {
		t.Errorf("the earlier logs are still there: %v", names)
	}
	again, err := OpenAttemptPages(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := again.Older(ctx, "whk_1", domain.LogFilter{}, nil, 100); err != nil || len(got) != len(all) {
		t.Errorf("after a second start: %d attempts, %v", len(got), err)
	}
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
	if _, err := coll.InsertMany(context.Background(), docs); err != nil {
		t.Fatal(err)
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
	publisher := newPublisher(t, js)
	record := func(from, to int) {
		for i := from; i < to; i++ {
			a := &webhooksv1.DeliveryAttempt{AttemptId: fmt.Sprintf("evt_%04d:whk_1:1", i), EventId: fmt.Sprintf("evt_%04d", i),
				WorkspaceId: "ws_a", WebhookId: "whk_1", Event: "call_started", AtUnixMs: int64(1000 + i), Success: true, Final: true}
			if err := publisher.RecordDurable(ctx, a); err != nil {
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
	StoreAttempts(ctx, js, p, slog.New(slog.DiscardHandler), nil)
	var held []string
	testkit.Eventually(t, 15*time.Second, "every attempt in the pages", func() bool {
		held = nil
		var before *app.LogPosition
		for {
			page, err := p.Older(ctx, "whk_1", domain.LogFilter{}, before, 100)
			if err != nil || len(page) == 0 {
				break
			}
			held = append(held, historyIDs(page)...)
			last := app.PositionOf(page[len(page)-1])
			before = &last
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
