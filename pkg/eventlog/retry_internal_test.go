package eventlog

import (
	"testing"
	"time"
)

// Writers that lost an append try again within milliseconds: no wait of
// Retry, the first included, is over twice its interval's 32 ms cap
// (the first was once drawn from the backoff library's 500 ms default).
func TestConflictWaitsAreMilliseconds(t *testing.T) {
	for range 200 {
		b := conflictBackOff()
		for attempt := range 8 {
			if wait := b.NextBackOff(); wait > 64*time.Millisecond || (attempt == 0 && wait > 2*time.Millisecond) {
				t.Fatalf("wait %d is %v", attempt+1, wait)
			}
		}
	}
}
