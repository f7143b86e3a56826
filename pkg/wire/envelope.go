package wire

import (
	"encoding/json"
	"time"
)

// Envelope is a platform event (spec 6.1) as producers publish it on
// platform.evt.<workspace_id>.<event> and as webhooks deliver it.
type Envelope struct {
	Event     string          `json:"event"`
	Timestamp string          `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// TimestampLayout is the ISO 8601 UTC form of envelope timestamps.
const TimestampLayout = "2006-01-02T15:04:05.000Z"

// FormatTimestamp renders t as an envelope timestamp.
func FormatTimestamp(t time.Time) string { return t.UTC().Format(TimestampLayout) }

// At is when the event happened: its timestamp, or stored (when the
// stream stored it) where the producer gave none that reads as RFC 3339.
func (e Envelope) At(stored time.Time) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, e.Timestamp); err == nil {
		return t
	}
	return stored
}
