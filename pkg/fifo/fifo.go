// Package fifo is a first-in, first-out queue that goroutines share: a
// producer adds without ever waiting (a client library's callback, an
// error handler called under its own lock), and a consumer takes what is
// there, waiting on Ready when nothing is. It takes memory only for what
// it holds.
package fifo

import "sync"

// Queue holds values in the order they were added. The zero value is not
// ready for use: make one with New.
type Queue[T any] struct {
	mu    sync.Mutex
	items []T
	limit int
	ready chan struct{} // holds a value while items may not be empty
}

// New is an empty queue holding at most limit values (0: no limit).
func New[T any](limit int) *Queue[T] {
	return &Queue[T]{limit: limit, ready: make(chan struct{}, 1)}
}

// Push adds v, unless the queue holds its limit already.
func (q *Queue[T]) Push(v T) bool {
	q.mu.Lock()
	if q.limit > 0 && len(q.items) >= q.limit {
		q.mu.Unlock()
		return false
	}
	q.items = append(q.items, v)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return true
}

// Ready receives when values may have been added since the last take
// that found none; a receive may find nothing left, so take again.
func (q *Queue[T]) Ready() <-chan struct{} { return q.ready }

// TakeUpTo moves the oldest values into dst, up to n in all, and returns
// it.
func (q *Queue[T]) TakeUpTo(dst []T, n int) []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	k := min(n-len(dst), len(q.items))
	if k <= 0 {
		return dst
	}
	dst = append(dst, q.items[:k]...)
	clear(q.items[:k])
	q.items = q.items[k:]
	if len(q.items) == 0 {
		q.items = nil // let the emptied array go
	}
	return dst
}

// TakeAll takes every value held.
func (q *Queue[T]) TakeAll() []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.items
	q.items = nil
	return out
}

// Len is how many values are held.
func (q *Queue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}
