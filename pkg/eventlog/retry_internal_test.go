package eventlog

import (
	"testing"
	"time"
)

// A writer that lost an append tries again within 2 ms (the first wait
// was once drawn from the backoff library's 500 ms default), and no wait
// is over twice the interval's 256 ms cap.
func TestConflictWaitsStartAtMilliseconds(t *testing.T) {
	for range 200 {
		b := conflictBackOff()
		for attempt := range 12 {
			if wait := b.NextBackOff(); wait > 512*time.Millisecond || (attempt == 0 && wait > 2*time.Millisecond) {
				t.Fatalf("wait %d is %v", attempt+1, wait)
			}
		}
	}
}
