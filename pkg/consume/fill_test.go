package consume

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

func TestFillTakesOnlyWhatHasArrivedWithoutALinger(t *testing.T) {
	msgs := make(chan jetstream.Msg, 10)
	msgs <- nil
	msgs <- nil
	got := fill(context.Background(), make([]jetstream.Msg, 1), msgs, 10, 0)
	if len(got) != 3 || len(msgs) != 0 {
		t.Fatalf("batch of %d, %d left; want 3 and 0", len(got), len(msgs))
	}
}

func TestFillWaitsForLateMessagesUpToTheLimit(t *testing.T) {
	msgs := make(chan jetstream.Msg) // every message arrives after fill started
	go func() {
		for range 5 {
			msgs <- nil
		}
	}()
	// An hour's linger: fill must return because the batch is full, not
	// because the linger ran out.
	got := fill(context.Background(), make([]jetstream.Msg, 1), msgs, 4, time.Hour)
	if len(got) != 4 {
		t.Fatalf("batch of %d; want 4", len(got))
	}
	<-msgs // the fifth stays for the next batch
}

func TestFillStopsLingeringWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got := fill(ctx, make([]jetstream.Msg, 1), make(chan jetstream.Msg), 4, time.Hour)
	if len(got) != 1 {
		t.Fatalf("batch of %d; want 1", len(got))
	}
}
