package memory

import (
	"context"
	"sync"
	"time"

	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// QAFeed is app.QAFeed in memory, for the QA worker's rule tests: what is
// pushed to a source is fed in batches, in order, and a batch the
// handler fails is fed again after Retry, as a stream's consumer
// redelivers it. Sequences and store times are given as a stream gives
// them.
type QAFeed struct {
	// Batch bounds a batch (default 256); Retry is the wait before a
	// failed batch is fed again (default 10 ms).
	Batch int
	Retry time.Duration

	mu      sync.Mutex
	pending map[app.QASource][]app.QAMessage
	seq     map[app.QASource]uint64
	pushed  chan struct{} // closed and replaced on each push
}

// NewQAFeed is a feed with nothing pushed.
func NewQAFeed() *QAFeed {
	return &QAFeed{pending: map[app.QASource][]app.QAMessage{}, seq: map[app.QASource]uint64{}, pushed: make(chan struct{})}
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
		f.pending[source] = append(f.pending[source], m)
	}
	close(f.pushed)
	f.pushed = make(chan struct{})
}

// Pending is how many messages of the source are not handled yet (a
// batch in hand counts until its handler succeeds).
func (f *QAFeed) Pending(source app.QASource) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.pending[source])
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
	for {
		f.mu.Lock()
		batch := append([]app.QAMessage(nil), f.pending[source][:min(limit, len(f.pending[source]))]...)
		pushed := f.pushed
		f.mu.Unlock()
		if len(batch) == 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-pushed:
				continue
			}
		}
		if err := h(ctx, batch); err != nil {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(retry):
				continue
			}
		}
		f.mu.Lock()
		f.pending[source] = f.pending[source][len(batch):]
		f.mu.Unlock()
	}
}
