package slots

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestATenantTakesAtMostItsShareAndOthersKeepRoom(t *testing.T) {
	f := New(3, 2)
	for range 2 {
		if err := f.TryAcquire("a"); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.TryAcquire("a"); !errors.Is(err, ErrTenantFull) {
		t.Fatalf("a third slot for a: %v", err)
	}
	if err := f.TryAcquire("b"); err != nil {
		t.Fatalf("b: %v", err)
	}
	if err := f.TryAcquire("c"); !errors.Is(err, ErrFull) {
		t.Fatalf("with every slot taken: %v", err)
	}
	f.Release("a")
	if err := f.TryAcquire("c"); err != nil {
		t.Fatalf("c after a released one: %v", err)
	}
}

func TestAcquireWaitsForARelease(t *testing.T) {
	f := New(1, 1)
	if err := f.Acquire(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- f.Acquire(context.Background(), "b") }()
	select {
	case err := <-got:
		t.Fatalf("acquired a taken slot: %v", err)
	default:
	}
	f.Release("a")
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

func TestAcquireEndsWithItsContext(t *testing.T) {
	f := New(1, 1)
	_ = f.TryAcquire("a")
	ctx, cancel := context.WithCancelCause(context.Background())
	why := errors.New("caller gone")
	cancel(why)
	if err := f.Acquire(ctx, "b"); !errors.Is(err, why) {
		t.Fatalf("got %v, want the context's cause", err)
	}
}

func TestFullForCountsFromTheLastSlotTaken(t *testing.T) {
	f := New(1, 1)
	now := time.Unix(100, 0)
	f.SetClock(func() time.Time { return now })
	if f.FullFor() != 0 {
		t.Fatal("full with every slot free")
	}
	_ = f.TryAcquire("a")
	now = now.Add(3 * time.Second)
	if f.FullFor() != 3*time.Second {
		t.Fatalf("full for %s", f.FullFor())
	}
	f.Release("a")
	if f.FullFor() != 0 {
		t.Fatal("still full after a release")
	}
}
