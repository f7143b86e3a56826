package adapters

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/bits-and-blooms/bloom/v3"
	lru "github.com/hashicorp/golang-lru/v2"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/mongox"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// pageIndex finds a webhook's pages of attempts by _id lookups alone. The
// embedded store answers any other query by reading every document of
// the collection (30,000 pages: 1.8 s a request, whichever webhook), and
// cannot update a document atomically; MongoDB reads an _id anywhere in
// the same time. So the index is written by inserts only, and read by id:
//
//   - Each webhook's pages take slots 0, 1, 2, … in the order they are
//     stored: slot s is a document with id "<webhook>/0/<s>" holding the
//     page's id and a summary of its attempts (time span, events, whether
//     any succeeded or failed, the deliveries whose first attempt it
//     holds). A writer takes the first free slot by inserting it; a
//     writer that loses the race to another finds the slot taken and
//     tries the next, so the slots taken are always 0..n-1.
//   - Every fanout slots make a node of level 1, every fanout nodes of
//     level 1 one of level 2, and so on: node k of level L summarises
//     slots [k·fanout^L, (k+1)·fanout^L). The writer of a node's last slot
//     inserts the node (a node's content follows from its slots, which
//     never change, so two writers write the same node). A level-1 node
//     carries a Bloom filter of its slots' deliveries sized to them; every
//     node, one of a fixed size, which a parent's is the union of (over
//     thousands of pages these fill up, and say "maybe" to everything).
//   - Every slot and node carries high: the newest attempt of any page in
//     its slot or before it. Walking newest first, a list that is full of
//     attempts newer than a node's high needs nothing at or before it.
//
// A read walks the tree from its newest end, skipping whole nodes whose
// summary cannot hold what it looks for; a node that is missing (its
// writer died between the slot and the node) is read through its
// children.
//
// A slot, and a node once complete, never changes: its content follows
// from its pages, which never change. So reads keep the summaries they
// find (summaries: without the deliveries and filters only a resend's
// search reads), and the newest end of a log, which every read of it
// walks again (each page further back of a paging reader), is read from
// the store once.
type pageIndex struct {
	coll    *mongo.Collection
	fanout  int64
	summary *lru.Cache[string, indexDoc] // by id

	endsMu sync.Mutex
	ends   map[string]int64 // per webhook, slots known taken: a lower bound of its n

	// writeMu makes this process's appends one at a time. slots holds,
	// per webhook, the slots of its level-1 node not yet complete that
	// this writer took or read, so completing the node rarely reads them
	// again; last, the slot it took last, if the webhook's next slot is
	// likely free (no other writer took one since, as far as it knows): a
	// find costs the embedded store more than an insert.
	writeMu sync.Mutex
	slots   map[string]map[int64]indexDoc
	last    map[string]taken
}

// taken is a slot taken, and its number.
type taken struct {
	s    int64
	slot indexDoc
}

// defaultFanout is the slots of a level-1 node, and the nodes of a node
// of every level above. A read looks at up to fanout-1 slots or nodes on
// each level at the edges of what it reads; a million pages are five
// levels.
const defaultFanout = 16

// indexDoc is a slot or a node.
type indexDoc struct {
	ID        string   `bson:"_id"`
	Page      string   `bson:"page,omitempty"` // a slot's page
	FirstMs   int64    `bson:"first_ms"`
	LastMs    int64    `bson:"last_ms"`
	High      int64    `bson:"high"`
	Events    []string `bson:"events,omitempty"` // distinct, sorted
	Succeeded bool     `bson:"succeeded,omitempty"`
	Failed    bool     `bson:"failed,omitempty"`
	// Deliveries, of a slot, are app.DeliveryID of its page's first
	// attempts, and of its attempts that keep the request body a resend
	// sends (app.FirstOf).
	Deliveries []string `bson:"deliveries,omitempty"`
	// Bloom, of a level-1 node, tests for its slots' deliveries. Wide,
	// of every node, tests for the deliveries under it at one size for
	// all nodes (wideBits), so that a parent's is its children's union.
	Bloom []byte `bson:"bloom,omitempty"`
	Wide  []byte `bson:"wide,omitempty"`
}

// summariesKept bounds the summaries a process keeps: a few hundred
// bytes each, a few MiB in all. A read walks at most fanout of them a
// level, so it covers the newest ends of hundreds of logs.
const summariesKept = 1 << 14

func newPageIndex(coll *mongo.Collection) *pageIndex {
	summary, _ := lru.New[string, indexDoc](summariesKept) // errs only on a size below 1
	return &pageIndex{coll: coll, fanout: defaultFanout, summary: summary, ends: map[string]int64{}, slots: map[string]map[int64]indexDoc{}, last: map[string]taken{}}
}

func indexID(webhookID string, level int, k int64) string {
	return fmt.Sprintf("%s/%d/%d", webhookID, level, k)
}

// slotOf is the slot of a page of one webhook's attempts.
func slotOf(pageID string, page []*webhooksv1.DeliveryAttempt) indexDoc {
	d := indexDoc{Page: pageID, FirstMs: page[0].GetAtUnixMs(), LastMs: page[0].GetAtUnixMs()}
	for _, a := range page {
		d.FirstMs, d.LastMs = min(d.FirstMs, a.GetAtUnixMs()), max(d.LastMs, a.GetAtUnixMs())
		d.Events = appendDistinct(d.Events, a.GetEvent())
		d.Succeeded, d.Failed = d.Succeeded || a.GetSuccess(), d.Failed || !a.GetSuccess()
		if id := app.DeliveryID(a); app.FirstOf(a, id, nil) {
			d.Deliveries = append(d.Deliveries, id)
		}
	}
	return d
}

func appendDistinct(sorted []string, more ...string) []string {
	for _, s := range more {
		if i, found := slices.BinarySearch(sorted, s); !found {
			sorted = slices.Insert(sorted, i, s)
		}
	}
	return sorted
}

// placed is a page's slot, to be placed in its webhook's index.
type placed struct {
	webhookID string
	slot      indexDoc
}

// node names node k of a webhook's index at level.
type node struct {
	webhookID string
	level     int
	k         int64
}

// add gives each slot, in order, its webhook's first free slot, then
// inserts the nodes they complete. The slots of one round (the next of
// each webhook) go in one insert: on the embedded store every insert is
// a commit of its own, a disk flush.
func (x *pageIndex) add(ctx context.Context, slots []placed) error {
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	queue := map[string][]indexDoc{}
	var order []string
	for _, p := range slots {
		if _, ok := queue[p.webhookID]; !ok {
			order = append(order, p.webhookID)
		}
		queue[p.webhookID] = append(queue[p.webhookID], p.slot)
	}
	for len(order) > 0 {
		round := make([]any, len(order))
		at := make([]int64, len(order))
		for i, w := range order {
			prev, ok := x.last[w]
			if !ok {
				s, err := x.end(ctx, w)
				if err != nil {
					return err
				}
				prev.s = s - 1
				if s > 0 {
					if prev.slot, err = x.slot(ctx, w, s-1); err != nil {
						return err
					}
				}
			}
			d := queue[w][0]
			at[i] = prev.s + 1
			d.ID, d.High = indexID(w, 0, at[i]), max(prev.slot.High, d.LastMs)
			round[i] = d
		}
		there, err := mongox.InsertNew(ctx, x.coll, round)
		if err != nil {
			return err
		}
		var completed []node
		next := order[:0]
		for i, w := range order {
			x.known(w, at[i]+1)
			delete(x.last, w)
			if !slices.Contains(there, i) {
				// (Else another writer took the slot: the next may be free.)
				x.last[w] = taken{at[i], round[i].(indexDoc)}
				x.remember(w, at[i], round[i].(indexDoc))
				queue[w] = queue[w][1:]
				if s := at[i]; (s+1)%x.fanout == 0 {
					completed = append(completed, node{w, 1, (s+1)/x.fanout - 1})
				}
			}
			if len(queue[w]) > 0 {
				next = append(next, w)
			}
		}
		order = next
		if err := x.complete(ctx, completed); err != nil {
			return err
		}
	}
	return nil
}

// complete inserts the nodes from their children, then the nodes above
// them they complete.
func (x *pageIndex) complete(ctx context.Context, nodes []node) error {
	for len(nodes) > 0 {
		docs := make([]any, len(nodes))
		for i, n := range nodes {
			d, err := x.build(ctx, n)
			if err != nil {
				return err
			}
			docs[i] = d
		}
		// A node there already was built by another writer from the same
		// slots: the same node.
		if _, err := mongox.InsertNew(ctx, x.coll, docs); err != nil {
			return err
		}
		var above []node
		for _, n := range nodes {
			x.forgetSlots(n)
			if (n.k+1)%x.fanout == 0 {
				above = append(above, node{n.webhookID, n.level + 1, (n.k+1)/x.fanout - 1})
			}
		}
		nodes = above
	}
	return nil
}

// build makes node n from its children: a level-1 node from the slots
// this writer remembers (else reads), one above from its children read
// (a read of fanout documents every fanout² slots or more).
func (x *pageIndex) build(ctx context.Context, n node) (indexDoc, error) {
	d := indexDoc{ID: indexID(n.webhookID, n.level, n.k)}
	var deliveries []string
	wide := bloom.New(wideBits, wideHashes)
	for c := n.k * x.fanout; c < (n.k+1)*x.fanout; c++ {
		var child indexDoc
		var err error
		if n.level == 1 {
			child, err = x.slot(ctx, n.webhookID, c)
		} else {
			child, err = x.node(ctx, node{n.webhookID, n.level - 1, c})
		}
		if err != nil {
			return d, err
		}
		if c == n.k*x.fanout {
			d.FirstMs, d.LastMs = child.FirstMs, child.LastMs
		}
		d.FirstMs, d.LastMs, d.High = min(d.FirstMs, child.FirstMs), max(d.LastMs, child.LastMs), child.High
		d.Events = appendDistinct(d.Events, child.Events...)
		d.Succeeded, d.Failed = d.Succeeded || child.Succeeded, d.Failed || child.Failed
		deliveries = append(deliveries, child.Deliveries...)
		if n.level > 1 {
			var cw bloom.BloomFilter
			if err := cw.UnmarshalBinary(child.Wide); err != nil || wide.Merge(&cw) != nil {
				return d, fmt.Errorf("attempt index: node %s: a child without its filter", d.ID)
			}
		}
	}
	if n.level == 1 {
		exact := bloom.NewWithEstimates(uint(max(len(deliveries), 1)), 0.01)
		for _, id := range deliveries {
			exact.AddString(id)
			wide.AddString(id)
		}
		var err error
		if d.Bloom, err = exact.MarshalBinary(); err != nil {
			return d, err
		}
	}
	var err error
	d.Wide, err = wide.MarshalBinary()
	return d, err
}

// The wide filters: 2 KiB, for a webhook's node of 256 pages of a few
// attempts each, about one false "maybe" in 100,000; of 4,096 such
// pages, one in six.
const (
	wideBits   = 1 << 14
	wideHashes = 4
)

func (x *pageIndex) remember(webhookID string, s int64, slot indexDoc) {
	if x.slots[webhookID] == nil {
		x.slots[webhookID] = map[int64]indexDoc{}
	}
	x.slots[webhookID][s] = slot
}

// slot is slot s, which this writer remembers or reads (and remembers):
// it is there, as all below the slots taken are.
func (x *pageIndex) slot(ctx context.Context, webhookID string, s int64) (indexDoc, error) {
	if d, ok := x.slots[webhookID][s]; ok {
		return d, nil
	}
	d, ok, err := x.get(ctx, indexID(webhookID, 0, s))
	if err == nil && !ok {
		err = fmt.Errorf("attempt index: slot %d of %s is missing", s, webhookID)
	}
	if err == nil {
		x.remember(webhookID, s, d)
	}
	return d, err
}

// node reads node n, made again from below if its writer died before
// inserting it.
func (x *pageIndex) node(ctx context.Context, n node) (indexDoc, error) {
	d, ok, err := x.get(ctx, indexID(n.webhookID, n.level, n.k))
	if err != nil || ok {
		return d, err
	}
	if d, err = x.build(ctx, n); err != nil {
		return d, err
	}
	x.forgetSlots(n)
	_, err = mongox.InsertNew(ctx, x.coll, []any{d})
	return d, err
}

// forgetSlots lets go of the slots of n, a level-1 node built: they are
// needed no more.
func (x *pageIndex) forgetSlots(n node) {
	if n.level == 1 {
		for c := n.k * x.fanout; c < (n.k+1)*x.fanout; c++ {
			delete(x.slots[n.webhookID], c)
		}
	}
}

// summaryOnly leaves the deliveries and their filters out of a read.
var summaryOnly = options.FindOne().SetProjection(bson.D{{Key: "deliveries", Value: 0}, {Key: "bloom", Value: 0}, {Key: "wide", Value: 0}})

// summaryOf is the summary of slot or node id: kept, or read and kept.
func (x *pageIndex) summaryOf(ctx context.Context, id string) (indexDoc, bool, error) {
	if d, ok := x.summary.Get(id); ok {
		return d, true, nil
	}
	d, ok, err := x.get(ctx, id, summaryOnly)
	if ok {
		x.summary.Add(id, d)
	}
	return d, ok, err
}

func (x *pageIndex) get(ctx context.Context, id string, opts ...options.Lister[options.FindOneOptions]) (indexDoc, bool, error) {
	var d indexDoc
	err := x.coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}, opts...).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return d, false, nil
	}
	return d, err == nil, err
}

func (x *pageIndex) taken(ctx context.Context, webhookID string, s int64) (bool, error) {
	err := x.coll.FindOne(ctx, bson.D{{Key: "_id", Value: indexID(webhookID, 0, s)}},
		options.FindOne().SetProjection(bson.D{{Key: "_id", Value: 1}})).Err()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return false, nil
	}
	return err == nil, err
}

// end is the webhook's count of slots taken, n, found from the lower
// bound this process knows by doubling steps, then halving them: about
// 2·log₂ of the slots taken since, in lookups.
func (x *pageIndex) end(ctx context.Context, webhookID string) (int64, error) {
	x.endsMu.Lock()
	lo, hi := x.ends[webhookID], int64(-1) // slots below lo are taken; hi is free
	x.endsMu.Unlock()
	for step := int64(1); hi < 0; step *= 2 {
		ok, err := x.taken(ctx, webhookID, lo+step-1)
		if err != nil {
			return 0, err
		}
		if ok {
			lo += step
		} else {
			hi = lo + step - 1
		}
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		ok, err := x.taken(ctx, webhookID, mid)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	x.known(webhookID, lo)
	return lo, nil
}

// known raises the lower bound of a webhook's slots taken to n.
func (x *pageIndex) known(webhookID string, n int64) {
	x.endsMu.Lock()
	x.ends[webhookID] = max(x.ends[webhookID], n)
	x.endsMu.Unlock()
}

// walker is what a read looks for: whether a slot or node may hold it,
// and whether the read is done before one whose newest attempt of all up
// to it is high.
type walker struct {
	filters bool // whether mayHold reads the deliveries and their filters
	mayHold func(d *indexDoc, level int) bool
	doneAt  func(high int64) bool
	visit   func(slot indexDoc) (done bool, err error)
}

// walk hands w.visit the webhook's slots that w may find something in,
// newest first, until w is done.
func (x *pageIndex) walk(ctx context.Context, webhookID string, w walker) error {
	n, err := x.end(ctx, webhookID)
	if err != nil || n == 0 {
		return err
	}
	level, span := 0, int64(1)
	for span < n {
		level, span = level+1, span*x.fanout
	}
	_, err = x.walkNode(ctx, webhookID, n, level, span, 0, w)
	return err
}

// walkNode walks node k of level (span slots), of the n slots taken.
func (x *pageIndex) walkNode(ctx context.Context, webhookID string, n int64, level int, span, k int64, w walker) (done bool, err error) {
	first := k * span
	if first >= n {
		return false, nil
	}
	if level == 0 || first+span <= n { // a slot, or a node complete
		var d indexDoc
		var ok bool
		var err error
		if w.filters {
			d, ok, err = x.get(ctx, indexID(webhookID, level, k))
		} else {
			d, ok, err = x.summaryOf(ctx, indexID(webhookID, level, k))
		}
		switch {
		case err != nil:
			return false, err
		case !ok && level == 0:
			return false, fmt.Errorf("attempt index: slot %d of %s is missing", k, webhookID)
		case ok && w.doneAt(d.High):
			return true, nil
		case ok && !w.mayHold(&d, level):
			return false, nil
		case level == 0:
			return w.visit(d)
		}
	}
	child := span / x.fanout
	for c := (k+1)*x.fanout - 1; c >= k*x.fanout; c-- {
		if done, err := x.walkNode(ctx, webhookID, n, level-1, child, c, w); done || err != nil {
			return done, err
		}
	}
	return false, nil
}

// selecting is a summary test of f and before: whether a slot or node
// may hold an attempt they select.
func selecting(f domain.LogFilter, before *app.LogPosition) func(d *indexDoc, level int) bool {
	to := f.ToMs // attempts before it
	if before != nil && (to == 0 || before.AtMs+1 < to) {
		to = before.AtMs + 1 // an attempt of its millisecond may stand below it
	}
	return func(d *indexDoc, _ int) bool {
		switch {
		case f.FromMs != 0 && d.LastMs < f.FromMs, to != 0 && d.FirstMs >= to:
			return false
		case f.Event != "" && !slices.Contains(d.Events, f.Event):
			return false
		case f.Status == domain.LogSuccess && !d.Succeeded, f.Status == domain.LogFailed && !d.Failed:
			return false
		}
		return true
	}
}

// holdingDelivery is a summary test for a delivery's first attempt.
func holdingDelivery(deliveryID string) func(d *indexDoc, level int) bool {
	return func(d *indexDoc, level int) bool {
		switch level {
		case 0:
			return slices.Contains(d.Deliveries, deliveryID)
		case 1:
			var f bloom.BloomFilter
			return f.UnmarshalBinary(d.Bloom) != nil || f.TestString(deliveryID)
		}
		var f bloom.BloomFilter
		return f.UnmarshalBinary(d.Wide) != nil || f.TestString(deliveryID)
	}
}
