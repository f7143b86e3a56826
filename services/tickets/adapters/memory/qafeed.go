package memory

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// QAFeed is app.QAFeed in memory, for the QA worker's rule tests: what is
// pushed to a source is fed in batches, in order, and a batch the
// handler fails is fed again after Retry, as a stream's consumer
// redelivers it. Sequences and store times are given as a stream gives
// them. Follow calls on one source split it as replicas on a durable
// consumer do: a message one holds is fed to no other, and one it held
// when its ctx ended goes back to the source.
type QAFeed struct {
	// Batch bounds a batch (default 256); Retry is the wait before a
	// failed batch is fed again (default 10 ms).
	Batch int
	Retry time.Duration

	mu      sync.Mutex
	pending map[app.QASource][]*queued
	seq     map[app.QASource]uint64
	changed chan struct{} // closed and replaced on each push or give-back
}

// queued is a message not handled yet; inHand while a Follow holds it.
type queued struct {
	msg    app.QAMessage
	inHand bool
}

// NewQAFeed is a feed with nothing pushed.
func NewQAFeed() *QAFeed {
	return &QAFeed{pending: map[app.QASource][]*queued{}, seq: map[app.QASource]uint64{}, changed: make(chan struct{})}
}

var _ app.QAFeed = (*QAFeed)(nil)

// Push adds messages to a source; one without a sequence or a store time
// gets the source's next, and now.
func (f *QAFeed) Push(source app.QASource, msgs ...app.QAMessage) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range msgs {
		f.seq[source]++
		if m.Seq == 0 {
			m.Seq = f.seq[source]
		}
		if m.Stored.IsZero() {
			m.Stored = time.Now()
		}
		f.pending[source] = append(f.pending[source], &queued{msg: m})
	}
	f.signal()
}

// signal wakes the Follow calls waiting for messages; f.mu is held.
func (f *QAFeed) signal() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// Pending is how many messages of the source are not handled yet (a
// batch in hand counts until its handler succeeds).
func (f *QAFeed) Pending(source app.QASource) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.pending[source])
}

// take puts the first limit messages of source no Follow holds in hand;
// with none, it returns what is closed when that may change.
func (f *QAFeed) take(source app.QASource, limit int) ([]*queued, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var batch []*queued
	for _, q := range f.pending[source] {
		if len(batch) == limit {
			break
		}
		if !q.inHand {
			q.inHand = true
			batch = append(batch, q)
		}
	}
	return batch, f.changed
}

// done removes a handled batch from its source.
func (f *QAFeed) done(source app.QASource, batch []*queued) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pending[source] = slices.DeleteFunc(f.pending[source], func(q *queued) bool { return slices.Contains(batch, q) })
}

// giveBack returns a batch not handled to its source, for any Follow.
func (f *QAFeed) giveBack(batch []*queued) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, q := range batch {
		q.inHand = false
	}
	f.signal()
}

// Follow implements app.QAFeed.
func (f *QAFeed) Follow(ctx context.Context, source app.QASource, h func(context.Context, []app.QAMessage) error) error {
	limit, retry := f.Batch, f.Retry
	if limit <= 0 {
		limit = 256
	}
	if retry <= 0 {
		retry = 10 * time.Millisecond
	}
	for ctx.Err() == nil {
		batch, changed := f.take(source, limit)
		if len(batch) == 0 {
			select {
			case <-ctx.Done():
			case <-changed:
			}
			continue
		}
		msgs := make([]app.QAMessage, len(batch))
		for i, q := range batch {
			msgs[i] = q.msg
		}
		for {
			if h(ctx, msgs) == nil {
				f.done(source, batch)
				break
			}
			select {
			case <-ctx.Done():
				f.giveBack(batch)
				return nil
			case <-time.After(retry):
			}
		}
	}
	return nil
}
