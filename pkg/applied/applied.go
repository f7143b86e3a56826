// Package applied tracks how far a reader of a stream has applied it, and
// lets a request wait until it has applied a given sequence: the way a
// read model that follows a stream gives read-your-writes to a caller
// that knows where its write landed.
package applied

import (
	"context"
	"sync"
)

// Mark is the stream sequence applied up to. The zero value is ready.
type Mark struct {
	mu       sync.Mutex
	seq      uint64
	advanced chan struct{} // closed and replaced when seq grows
}

// Advance records that every record up to seq is applied; a lower seq
// changes nothing.
func (m *Mark) Advance(seq uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if seq > m.seq {
		m.seq = seq
		if m.advanced != nil {
			close(m.advanced)
			m.advanced = nil
		}
	}
}

// Wait returns once every record up to seq is applied, or ctx's error.
func (m *Mark) Wait(ctx context.Context, seq uint64) error {
	for {
		m.mu.Lock()
		if m.seq >= seq {
			m.mu.Unlock()
			return nil
		}
		if m.advanced == nil {
			m.advanced = make(chan struct{})
		}
		advanced := m.advanced
		m.mu.Unlock()
		select {
		case <-advanced:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Reset starts the mark over at nothing applied: what it marked was of a
// stream that is gone (made anew, numbered from 1 again).
func (m *Mark) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq = 0
}
