package consume

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/tick"
)

// held are the messages a consumer has been handed and has not yet
// acknowledged or given back. A keeper tells the server of each one held
// for a third of AckWait that it is still in hand (InProgress), so that
// only what nobody holds comes back after AckWait: what a node that was
// lost delivered and nobody received, or what a killed replica held. A
// message merely waiting here behind a slow batch is not delivered
// again, so AckWait can be short, and a node's loss costs seconds, not a
// long AckWait, of the messages it had on the way.
type held struct {
	mu    sync.Mutex
	since map[jetstream.Msg]time.Time // when each was delivered, or last said to be in hand
}

func newHeld() *held { return &held{since: map[jetstream.Msg]time.Time{}} }

// add records m, just delivered.
func (h *held) add(m jetstream.Msg) {
	h.mu.Lock()
	h.since[m] = time.Now()
	h.mu.Unlock()
}

// settled forgets msgs, acknowledged or given back.
func (h *held) settled(msgs ...jetstream.Msg) {
	h.mu.Lock()
	for _, m := range msgs {
		delete(h.since, m)
	}
	h.mu.Unlock()
}

// keep says, every interval until ctx ends, that each message held for
// interval or longer is still in hand.
func (h *held) keep(ctx context.Context, interval time.Duration) {
	var due []jetstream.Msg
	tick.Every(ctx, interval, func() {
		now := time.Now()
		due = due[:0]
		h.mu.Lock()
		for m, at := range h.since {
			if now.Sub(at) >= interval {
				due = append(due, m)
				h.since[m] = now
			}
		}
		h.mu.Unlock()
		for _, m := range due {
			_ = m.InProgress()
		}
	})
}
