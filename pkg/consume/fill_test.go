package consume

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

func TestFillTakesOnlyWhatHasArrivedWithoutALinger(t *testing.T) {
	in := newInbox()
	in.put(nil)
	in.put(nil)
	got := fill(context.Background(), make([]jetstream.Msg, 1), in, 10, 0)
	if left := len(in.rest()); len(got) != 3 || left != 0 {
		t.Fatalf("batch of %d, %d left; want 3 and 0", len(got), left)
	}
}

func TestFillWaitsForLateMessagesUpToTheLimit(t *testing.T) {
	in := newInbox()
	arrived := make(chan struct{})
	go func() { // every message arrives after fill started
		<-arrived
		for range 5 {
			in.put(nil)
		}
	}()
	close(arrived)
	// An hour's linger: fill must return because the batch is full, not
	// because the linger ran out.
	got := fill(context.Background(), make([]jetstream.Msg, 1), in, 4, time.Hour)
	if len(got) != 4 {
		t.Fatalf("batch of %d; want 4", len(got))
	}
}

func TestFillStopsLingeringWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got := fill(ctx, make([]jetstream.Msg, 1), newInbox(), 4, time.Hour)
	if len(got) != 1 {
		t.Fatalf("batch of %d; want 1", len(got))
	}
}

// numbered is a message known by its number.
type numbered struct {
	jetstream.Msg
	n int
}

// The inbox hands messages out in the order they came, and what a batch
// did not take stays for the next.
func TestTheInboxKeepsItsOrder(t *testing.T) {
	in := newInbox()
	for n := range 5 {
		in.put(numbered{n: n})
	}
	var order []int
	for _, batch := range [][]jetstream.Msg{in.take(nil, 3), in.take(make([]jetstream.Msg, 0, 3), 1), in.rest()} {
		for _, m := range batch {
			order = append(order, m.(numbered).n)
		}
	}
	if !slices.Equal(order, []int{0, 1, 2, 3, 4}) {
		t.Fatalf("handed out %v; want 0 to 4 in order", order)
	}
}
