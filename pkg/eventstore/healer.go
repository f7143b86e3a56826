package eventstore

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// healEvery bounds how often a Healer looks again, and healTimeout how
// long one look may take.
const (
	healEvery   = time.Second
	healTimeout = 10 * time.Second
)

// Healer looks, in the background, whether what it keeps (a stream, a
// bucket, an object store) is gone when told of a failure that may come
// of that, and makes it again: at most one look at a time and one every
// healEvery. The caller is never held: the same failures come of a
// cluster between leaders, which answers no one for seconds, and a look
// then would only delay the caller's own retry. The zero Healer is ready.
type Healer struct {
	running atomic.Bool
	last    atomic.Int64 // when the last look began, unix nanoseconds
}

// Heal runs look in the background when err may come of what is kept
// being gone, unless a look is under way or began less than healEvery
// ago. look finds out whether it is gone and, if so, makes it again.
func (h *Healer) Heal(err error, look func(ctx context.Context)) {
	if !maybeGone(err) || time.Since(time.Unix(0, h.last.Load())) < healEvery || !h.running.CompareAndSwap(false, true) {
		return
	}
	h.last.Store(time.Now().UnixNano())
	go func() {
		defer h.running.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), healTimeout)
		defer cancel()
		look(ctx)
	}()
}

// maybeGone reports whether err may come of the stream (or bucket) an
// operation was on being gone: a publish nobody stores, a request nobody
// answers, a lookup that finds nothing. Only a lookup tells.
func maybeGone(err error) bool {
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrBucketNotFound)
}
