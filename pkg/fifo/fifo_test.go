package fifo

import (
	"slices"
	"testing"
)

// Values come out in the order they went in, a take leaves what it did
// not take for the next, and a full queue refuses more.
func TestQueueKeepsOrderAndLimit(t *testing.T) {
	q := New[int](4)
	for v := range 5 {
		if ok := q.Push(v); ok != (v < 4) {
			t.Fatalf("push %d: %v", v, ok)
		}
	}
	got := q.TakeUpTo(nil, 3)
	got = q.TakeUpTo(got, 3) // full already: takes nothing
	if q.Len() != 1 || !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("took %v, %d left; want [0 1 2], 1 left", got, q.Len())
	}
	q.Push(9)
	if got = q.TakeAll(); !slices.Equal(got, []int{3, 9}) || q.Len() != 0 {
		t.Fatalf("the rest %v; want [3 9]", got)
	}
}

// Ready says that something was added; an unlimited queue takes any
// number.
func TestQueueSignalsWhatWasAdded(t *testing.T) {
	q := New[string](0)
	select {
	case <-q.Ready():
		t.Fatal("ready with nothing added")
	default:
	}
	for range 1000 {
		q.Push("x")
	}
	select {
	case <-q.Ready():
	default:
		t.Fatal("not ready after a push")
	}
	if n := len(q.TakeUpTo(nil, 2000)); n != 1000 {
		t.Fatalf("took %d; want 1000", n)
	}
}
