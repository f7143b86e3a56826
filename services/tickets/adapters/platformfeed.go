package adapters

import (
	"context"
	"sync"

	"github.com/voiceai-platform/voiceai/pkg/applied"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
)

// platformFeed applies PLATFORM records to the directory in their order,
// reading them (the event, its sealed transcript) on several goroutines
// ahead of that: opening a transcript waits for its key from the key
// store, and a restart's tail opens tens of thousands, one after the
// other otherwise.
type platformFeed struct {
	d     *Directory
	apply func(context.Context, *pendingRecord) // each record, in order
	work  chan *pendingRecord                   // to the readers
	order chan *pendingRecord                   // to the applier, in the records' order

	mu        sync.Mutex
	progress  *sync.Cond
	delivered uint64 // records handed to the feed
	applied   uint64 // records applied, in order

	// appliedSeq is the stream sequence of the last record applied, or
	// of the snapshot the directory started from.
	appliedSeq applied.Mark
}

// pendingRecord is one record on its way: read once done is closed.
type pendingRecord struct {
	rec  eventstore.Record
	ev   conversationEvent
	ok   bool
	done chan struct{}
}

// platformReaders is how many records are read at once; platformAhead,
// how far reading may run ahead of applying (a transcript each).
const (
	platformReaders = 8
	platformAhead   = 512
)

// newPlatformFeed starts the feed's goroutines, which end with ctx; apply
// (nil: the directory's conversations record it) takes each record read,
// in order.
func newPlatformFeed(ctx context.Context, d *Directory, apply func(context.Context, *pendingRecord)) *platformFeed {
	f := &platformFeed{d: d, apply: apply, work: make(chan *pendingRecord, platformAhead), order: make(chan *pendingRecord, platformAhead)}
	if f.apply == nil {
		f.apply = f.record
	}
	f.progress = sync.NewCond(&f.mu)
	for range platformReaders {
		go f.read(ctx)
	}
	go f.applyInOrder(ctx)
	go func() { // wake a waiter when ctx ends
		<-ctx.Done()
		f.mu.Lock()
		f.progress.Broadcast()
		f.mu.Unlock()
	}()
	return f
}

// add hands over the next record (FollowAfter's callback: one goroutine,
// in order). It blocks while reading is platformAhead ahead.
func (f *platformFeed) add(ctx context.Context, rec eventstore.Record) {
	r := &pendingRecord{rec: rec, done: make(chan struct{})}
	f.mu.Lock()
	f.delivered++
	f.mu.Unlock()
	// In order first: every record before r is with the readers already,
	// so the applier, waiting for the oldest, always gets further.
	select {
	case f.order <- r:
	case <-ctx.Done():
		return
	}
	select {
	case f.work <- r:
	case <-ctx.Done():
	}
}

func (f *platformFeed) read(ctx context.Context) {
	for {
		select {
		case r := <-f.work:
			r.ev, r.ok = parseConversationEvent(r.rec)
			if r.ok {
				r.ev.openSealed(ctx, f.d.Keys)
			}
			close(r.done)
		case <-ctx.Done():
			return
		}
	}
}

func (f *platformFeed) applyInOrder(ctx context.Context) {
	for {
		var r *pendingRecord
		select {
		case r = <-f.order:
		case <-ctx.Done():
			return
		}
		select {
		case <-r.done:
		case <-ctx.Done():
			return
		}
		f.apply(ctx, r)
		f.mu.Lock()
		f.applied++
		f.progress.Broadcast()
		f.mu.Unlock()
		f.appliedSeq.Advance(r.rec.Seq)
	}
}

// record applies r to the directory's conversations: the index's
// snapshots say up to which record they hold, so none may be applied
// before one before it.
func (f *platformFeed) record(ctx context.Context, r *pendingRecord) {
	if !r.ok {
		f.d.log.Warn("platform event ignored: not a conversation event with well-formed ids", "subject", r.rec.Subject, "seq", r.rec.Seq)
		return
	}
	_ = f.d.Conversations.Record(ctx, r.rec.Seq, r.ev.summaryEvent())
}

// drain waits until every record handed over so far is applied, or ctx
// ends.
func (f *platformFeed) drain(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.applied < f.delivered && ctx.Err() == nil {
		f.progress.Wait()
	}
	return ctx.Err()
}
