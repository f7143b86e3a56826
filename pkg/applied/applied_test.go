package applied

import (
	"context"
	"errors"
	"testing"
)

// A wait returns at once for what is applied, when the mark reaches its
// sequence for what is not, and with ctx's error if it never does.
func TestWaitForTheMark(t *testing.T) {
	var m Mark
	ctx := context.Background()
	if err := m.Wait(ctx, 0); err != nil {
		t.Fatalf("waiting for nothing: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Wait(ctx, 5) }()
	m.Advance(3)
	m.Advance(2) // lower: changes nothing
	select {
	case err := <-done:
		t.Fatalf("returned at 3 of 5: %v", err)
	default:
	}
	m.Advance(7)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := m.Wait(ctx, 7); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := m.Wait(cancelled, 8); !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting past the mark on an ended context: %v", err)
	}
}
