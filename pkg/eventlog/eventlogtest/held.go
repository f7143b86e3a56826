package eventlogtest

import (
	"context"
	"sync"

	"github.com/voiceai-platform/voiceai/pkg/eventlog"
)

// Held is an event log whose writes, once armed, wait for one another:
// the callers of the next n writes are held until all n have come. Race
// tests use it to have commands that have all decided before any is
// stored (the default), or, with AppendsOnceStored, single appends that
// are all stored before any caller goes on. Unarmed, it writes as Store.
type Held struct {
	eventlog.Store
	// AppendsOnceStored holds an Append after it is stored rather than
	// before; batches are always held before.
	AppendsOnceStored bool

	mu      sync.Mutex
	waiting int
	release chan struct{}
}

// Arm holds the callers of the next n writes until all n have come.
func (h *Held) Arm(n int) {
	h.mu.Lock()
	h.waiting, h.release = n, make(chan struct{})
	h.mu.Unlock()
}

// hold counts one armed write and waits until all have come.
func (h *Held) hold() {
	h.mu.Lock()
	release := h.release
	if h.waiting > 0 {
		if h.waiting--; h.waiting == 0 {
			close(h.release)
			h.release = nil
		}
	}
	h.mu.Unlock()
	if release != nil {
		<-release
	}
}

func (h *Held) Append(ctx context.Context, subject string, expected uint64, commandID string, ev eventlog.Event) (eventlog.Appended, error) {
	if !h.AppendsOnceStored {
		h.hold()
		return h.Store.Append(ctx, subject, expected, commandID, ev)
	}
	res, err := h.Store.Append(ctx, subject, expected, commandID, ev)
	h.hold()
	return res, err
}

func (h *Held) AppendAll(ctx context.Context, batch []eventlog.Write) ([]eventlog.Appended, error) {
	h.hold()
	return h.Store.AppendAll(ctx, batch)
}
