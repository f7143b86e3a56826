package warmup

import (
	"errors"
	"testing"
)

// Steps that allocate run until the collector has run the number of
// times asked; a step's error ends the warm-up at once; most bounds it.
func TestUntilCollected(t *testing.T) {
	var sink [][]byte
	steps := 0
	if err := UntilCollected(2, 10_000, func(int) error {
		steps++
		sink = append(sink[:0], make([]byte, 1<<20))
		return nil
	}); err != nil || steps == 0 || steps == 10_000 {
		t.Fatalf("allocating steps: %d run, err %v", steps, err)
	}
	failed := errors.New("step failed")
	steps = 0
	if err := UntilCollected(2, 10, func(int) error { steps++; return failed }); !errors.Is(err, failed) || steps != 1 {
		t.Fatalf("a failing step: %d run, err %v", steps, err)
	}
	steps = 0
	if err := UntilCollected(1000, 3, func(int) error { steps++; return nil }); err != nil || steps != 3 {
		t.Fatalf("bounded by most: %d run, err %v", steps, err)
	}
	_ = sink
}
