package consume

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/fifo"
)

func TestFillTakesOnlyWhatHasArrivedWithoutALinger(t *testing.T) {
	in := fifo.New[jetstream.Msg](0)
	in.Push(nil)
	in.Push(nil)
	got := fill(context.Background(), make([]jetstream.Msg, 1), in, 10, 0)
	if left := len(in.TakeAll()); len(got) != 3 || left != 0 {
		t.Fatalf("batch of %d, %d left; want 3 and 0", len(got), left)
	}
}

func TestFillWaitsForLateMessagesUpToTheLimit(t *testing.T) {
	in := fifo.New[jetstream.Msg](0)
	arrived := make(chan struct{})
	go func() { // every message arrives after fill started
		<-arrived
		for range 5 {
			in.Push(nil)
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
	got := fill(ctx, make([]jetstream.Msg, 1), fifo.New[jetstream.Msg](0), 4, time.Hour)
	if len(got) != 1 {
		t.Fatalf("batch of %d; want 1", len(got))
	}
}
