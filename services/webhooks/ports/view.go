package ports

import (
	"encoding/json"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/wire"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

type retryView struct {
	MaxRetries         int32   `json:"max_retries"`
	RetryDelay         int32   `json:"retry_delay"`
	ExponentialBackoff bool    `json:"exponential_backoff"`
	MaxDelay           int32   `json:"max_delay"`
	RetryOnStatus      []int32 `json:"retry_on_status"`
}

type webhookView struct {
	WebhookID      string    `json:"webhook_id"`
	URL            string    `json:"url"`
	Events         []string  `json:"events"`
	Active         bool      `json:"active"`
	RetryConfig    retryView `json:"retry_config"`
	Secret         *string   `json:"secret,omitempty"`
	SecretHint     string    `json:"secret_hint"`
	DisabledReason *string   `json:"disabled_reason"`
	DisabledAtUnix *int64    `json:"disabled_at_unix"`
	CreatedAtUnix  int64     `json:"created_at_unix"`
	UpdatedAtUnix  int64     `json:"updated_at_unix"`
	// Relay marks a webhook without a url whose deliveries a polling
	// client takes (an extension).
	Relay bool `json:"relay"`
	// What the workspace webhooks API shows too: the display name, the
	// request headers, whether the dispatcher disabled it, and the latest
	// delivery that failed for good.
	Name                       string            `json:"name"`
	RequestHeaders             map[string]string `json:"request_headers"`
	IsAutoDisabled             bool              `json:"is_auto_disabled"`
	MostRecentFailureErrorCode *int32            `json:"most_recent_failure_error_code"`
	MostRecentFailureTimestamp *int64            `json:"most_recent_failure_timestamp"`
	ConsecutiveFailures        int32             `json:"consecutive_failures"`
}

// autoDisabled reports whether the dispatcher, not a user, disabled w
// (a run of failures, or a receiver answering 410 Gone).
func autoDisabled(w *webhooksv1.Webhook) bool {
	return !w.GetActive() && w.GetDisabledReason() != ""
}

// lastFailure is w's latest delivery that failed for good: its status (0:
// no answer) and Unix seconds; nil, nil when none did. The delivery log
// knows it; a failure it no longer holds is the one the webhook recorded
// when the dispatcher disabled it.
func lastFailure(w *webhooksv1.Webhook, run domain.Run) (*int32, *int64) {
	code, atMs := run.LastCode, run.LastAt.UnixMilli()
	if run.LastAt.IsZero() {
		code, atMs = w.GetLastFailureCode(), w.GetLastFailureAtUnixMs()
	}
	if atMs <= 0 {
		return nil, nil
	}
	at := atMs / 1000
	return &code, &at
}

func viewOf(w *webhooksv1.Webhook, secret *string, run domain.Run) webhookView {
	rc := w.GetRetryConfig()
	codes := rc.GetRetryOnStatus()
	if codes == nil {
		codes = []int32{}
	}
	v := webhookView{
		WebhookID: w.GetWebhookId(), URL: w.GetUrl(), Events: w.GetEvents(), Active: w.GetActive(),
		RetryConfig: retryView{
			MaxRetries: rc.GetMaxRetries(), RetryDelay: rc.GetRetryDelay(), ExponentialBackoff: rc.GetExponentialBackoff(),
			MaxDelay: rc.GetMaxDelay(), RetryOnStatus: codes,
		},
		Secret: secret, SecretHint: w.GetSecretHint(), DisabledAtUnix: w.DisabledAtUnix,
		CreatedAtUnix: w.GetCreatedAtUnix(), UpdatedAtUnix: w.GetUpdatedAtUnix(), Relay: w.GetRelay(),
		Name: w.GetName(), RequestHeaders: domain.HideHeaderValues(w.GetRequestHeaders()), IsAutoDisabled: autoDisabled(w), ConsecutiveFailures: int32(run.Failures),
	}
	if v.Events == nil {
		v.Events = []string{}
	}
	v.MostRecentFailureErrorCode, v.MostRecentFailureTimestamp = lastFailure(w, run)
	if r := w.GetDisabledReason(); r != "" {
		v.DisabledReason = &r
	}
	return v
}

type pagination struct {
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
	TotalCount int     `json:"total_count"`
}

type listView struct {
	Data       []webhookView `json:"data"` // spec 4.7's list convention
	Pagination pagination    `json:"pagination"`
}

// logEntry is one attempt in the spec 6.4 shape.
type logEntry struct {
	Timestamp      string  `json:"timestamp"`
	Event          string  `json:"event"`
	EventID        string  `json:"event_id"`
	Status         string  `json:"status"`
	ResponseCode   int32   `json:"response_code"`
	DeliveryTimeMs *int64  `json:"delivery_time_ms,omitempty"`
	RetryCount     *int32  `json:"retry_count,omitempty"`
	Error          *string `json:"error,omitempty"`
	// DeliveryID names the delivery the attempt belongs to: what a resend
	// takes.
	DeliveryID string `json:"delivery_id"`
	// RequestBody is the body posted, on a delivery's first attempt while
	// the log keeps it.
	RequestBody json.RawMessage `json:"request_body,omitempty"`
	// ResponseBody is the first bytes of the receiver's answer.
	ResponseBody string `json:"response_body,omitempty"`
}

func logEntryOf(a *webhooksv1.DeliveryAttempt) logEntry {
	e := logEntry{
		Timestamp: wire.FormatTimestamp(time.UnixMilli(a.GetAtUnixMs())), Event: a.GetEvent(), EventID: a.GetEventId(),
		ResponseCode: a.GetResponseCode(), DeliveryID: app.DeliveryID(a), ResponseBody: a.GetResponseBody(),
	}
	if body := a.GetRequestBody(); json.Valid(body) {
		e.RequestBody = body
	}
	if a.GetSuccess() {
		e.Status = "success"
		ms := a.GetDurationMs()
		e.DeliveryTimeMs = &ms
	} else {
		e.Status = "failed"
		rc, msg := a.GetRetryCount(), a.GetError()
		e.RetryCount, e.Error = &rc, &msg
	}
	return e
}

type logsView struct {
	WebhookID        string     `json:"webhook_id"`
	RecentDeliveries []logEntry `json:"recent_deliveries"`
	NextCursor       *string    `json:"next_cursor"`
	HasMore          bool       `json:"has_more"`
}

type resentView struct {
	DeliveryID string `json:"delivery_id"`
	EventID    string `json:"event_id"`
	Event      string `json:"event"`
	Status     string `json:"status"`
}

func resentViewOf(r app.Resent) resentView {
	return resentView{DeliveryID: r.DeliveryID, EventID: r.EventID, Event: r.Event, Status: "queued"}
}

type recoveredView struct {
	RecoveredCount int          `json:"recovered_count"`
	Deliveries     []resentView `json:"deliveries"`
	HasMore        bool         `json:"has_more"`
}

type testView struct {
	WebhookID      string  `json:"webhook_id"`
	Event          string  `json:"event"`
	EventID        string  `json:"event_id"`
	Status         string  `json:"status"`
	ResponseCode   int32   `json:"response_code"`
	DeliveryTimeMs int64   `json:"delivery_time_ms"`
	Error          *string `json:"error"`
}

func testViewOf(a *webhooksv1.DeliveryAttempt) testView {
	v := testView{
		WebhookID: a.GetWebhookId(), Event: a.GetEvent(), EventID: a.GetEventId(), Status: "success",
		ResponseCode: a.GetResponseCode(), DeliveryTimeMs: a.GetDurationMs(),
	}
	if !a.GetSuccess() {
		v.Status = "failed"
		msg := a.GetError()
		v.Error = &msg
	}
	return v
}

type webhookHealth struct {
	WebhookID           string   `json:"webhook_id"`
	URL                 string   `json:"url"`
	Status              string   `json:"status"`
	Active              bool     `json:"active"`
	Disabled            bool     `json:"disabled"`
	DisabledReason      *string  `json:"disabled_reason"`
	SuccessRate         *float64 `json:"success_rate"`
	RecentAttempts      int      `json:"recent_attempts"`
	ConsecutiveFailures int      `json:"consecutive_failures"`
	LastSuccessAt       *string  `json:"last_success_at"`
	LastFailureAt       *string  `json:"last_failure_at"`
	LastError           *string  `json:"last_error"`
	Backlog             uint64   `json:"backlog"`
}

type healthView struct {
	Webhooks []webhookHealth `json:"webhooks"`
}

// Health statuses.
const (
	StatusHealthy  = "healthy"  // the latest attempt succeeded
	StatusDegraded = "degraded" // recent failures, but fewer than FailingAfter in a row
	StatusFailing  = "failing"  // FailingAfter or more failures in a row
	StatusDisabled = "disabled" // inactive (by a user, or by the dispatcher after a 410)
	StatusUnknown  = "unknown"  // no attempts yet
	FailingAfter   = 5
)

func healthOf(row app.HealthRow) webhookHealth {
	w, h := row.Webhook, row.Health
	out := webhookHealth{
		WebhookID: w.GetWebhookId(), URL: w.GetUrl(), Active: w.GetActive(), Disabled: !w.GetActive(),
		RecentAttempts: h.Attempts, ConsecutiveFailures: h.ConsecutiveFailures, Backlog: row.Backlog,
	}
	if r := w.GetDisabledReason(); r != "" {
		out.DisabledReason = &r
	}
	if h.Attempts > 0 {
		rate := float64(int(h.SuccessRate*10000+0.5)) / 10000
		out.SuccessRate = &rate
	}
	ts := func(ms int64) *string {
		if ms == 0 {
			return nil
		}
		s := wire.FormatTimestamp(time.UnixMilli(ms))
		return &s
	}
	out.LastSuccessAt, out.LastFailureAt = ts(h.LastSuccessUnixMs), ts(h.LastFailureUnixMs)
	if h.LastError != "" {
		e := h.LastError
		out.LastError = &e
	}
	switch {
	case !w.GetActive():
		out.Status = StatusDisabled
	case h.Attempts == 0:
		out.Status = StatusUnknown
	case h.ConsecutiveFailures >= FailingAfter:
		out.Status = StatusFailing
	case h.ConsecutiveFailures > 0 || h.SuccessRate < 0.95:
		out.Status = StatusDegraded
	default:
		out.Status = StatusHealthy
	}
	return out
}
