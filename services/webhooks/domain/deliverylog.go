package domain

// LogFilter selects entries of a webhook's delivery log. Zero fields
// select everything.
type LogFilter struct {
	Event  string // an event name
	Status string // "success" or "failed"
	FromMs int64  // attempted at or after, ms since the epoch
	ToMs   int64  // attempted before, ms since the epoch
}

// Log statuses.
const (
	LogSuccess = "success"
	LogFailed  = "failed"
)

// Matches reports whether an attempt of event, made at atMs, that
// succeeded or not, is selected.
func (f LogFilter) Matches(event string, success bool, atMs int64) bool {
	switch {
	case f.Event != "" && event != f.Event:
		return false
	case f.Status == LogSuccess && !success, f.Status == LogFailed && success:
		return false
	case f.FromMs != 0 && atMs < f.FromMs:
		return false
	case f.ToMs != 0 && atMs >= f.ToMs:
		return false
	}
	return true
}

// Health is what the log knows of a webhook's recent deliveries.
type Health struct {
	Attempts            int     // in the window
	SuccessRate         float64 // 0..1; meaningless when Attempts is 0
	ConsecutiveFailures int
	LastSuccessUnixMs   int64
	LastFailureUnixMs   int64
	LastError           string
	LastResponseCode    int32
}
