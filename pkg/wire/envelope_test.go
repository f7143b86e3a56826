package wire

import (
	"testing"
	"time"
)

func TestEnvelopeAtFallsBackToTheStoredTime(t *testing.T) {
	stored := time.Unix(1_800_000_000, 0)
	for ts, want := range map[string]time.Time{
		"2027-01-02T03:04:05.678Z":  time.Date(2027, 1, 2, 3, 4, 5, 678e6, time.UTC),
		"2027-01-02T05:04:05+02:00": time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC),
		"":                          stored,
		"yesterday":                 stored,
	} {
		if got := (Envelope{Timestamp: ts}).At(stored); !got.Equal(want) {
			t.Errorf("At of %q = %s, want %s", ts, got, want)
		}
	}
	if got := FormatTimestamp(time.Date(2027, 1, 2, 5, 4, 5, 0, time.FixedZone("", 2*3600))); got != "2027-01-02T03:04:05.000Z" {
		t.Errorf("FormatTimestamp = %q", got)
	}
}
