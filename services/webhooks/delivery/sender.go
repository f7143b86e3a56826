// Package delivery sends one signed webhook attempt over HTTP, through a
// dialer that refuses private destinations at connect time (pkg/outbound).
package delivery

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/outbound"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// Headers of every delivery.
const (
	HeaderSignature = "X-Service-Signature"
	// HeaderEventID is the event's id, the same on every retry and on
	// every webhook: receivers deduplicate on it.
	HeaderEventID = "X-Service-Event-Id"
	// HeaderTimestamp is when this attempt was sent, Unix seconds.
	HeaderTimestamp = "X-Service-Timestamp"
	// HeaderEvent is the event name.
	HeaderEvent = "X-Service-Event"
	// HeaderWebhookID names the webhook delivered to.
	HeaderWebhookID = "X-Service-Webhook-Id"
	// HeaderAttempt is the attempt number, 1 for the first.
	HeaderAttempt = "X-Service-Delivery-Attempt"
	UserAgent     = "voiceai-webhooks/1.0"

	// HeaderElevenLabsSignature is what the official SDK's
	// webhooks.constructEvent verifies: "t=<unix seconds>,v0=<hex>".
	HeaderElevenLabsSignature = "ElevenLabs-Signature"
	// The Standard Webhooks headers (standardwebhooks.com): the message id
	// (the event id), the attempt's Unix seconds, and "v1,<base64>".
	HeaderStandardID        = "Webhook-Id"
	HeaderStandardTimestamp = "Webhook-Timestamp"
	HeaderStandardSignature = "Webhook-Signature"
)

// maxResponseBody is how much of a receiver's answer is read (and
// discarded) so the connection can be reused.
const maxResponseBody = 64 << 10

// Sender posts signed deliveries.
type Sender struct {
	client  *http.Client
	guard   *outbound.Guard
	timeout time.Duration
	// TimeUnit scales Retry-After (one second in production).
	TimeUnit time.Duration
}

// NewSender returns a sender whose attempts last at most timeout. It never
// follows redirects and never uses a proxy from the environment (a proxy
// would bypass the destination check).
func NewSender(g *outbound.Guard, timeout time.Duration) *Sender {
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           g.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   128,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   timeout,
		ExpectContinueTimeout: time.Second,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12},
	}
	return &Sender{
		guard:   g,
		timeout: timeout,
		client: &http.Client{
			Transport:     tr,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		TimeUnit: time.Second,
	}
}

// Guard is the sender's destination guard.
func (s *Sender) Guard() *outbound.Guard { return s.guard }

// Timeout is the per-attempt time limit.
func (s *Sender) Timeout() time.Duration { return s.timeout }

// Request is one attempt to make.
type Request struct {
	URL       string
	Secret    []byte
	Body      []byte
	Event     string
	EventID   string
	WebhookID string
	Attempt   int // 1 for the first
	// Traceparent, when set, is sent so the receiver can join the trace.
	Traceparent string
	// Extra are the webhook's own request headers (request_headers); the
	// platform's headers are set after them, so none can be replaced.
	Extra map[string]string
}

// Result is what an attempt produced.
type Result struct {
	Outcome  domain.Outcome
	Duration time.Duration
	Error    string // "" on a 2xx
	// ResponseBody is the first MaxKeptResponse bytes of the answer.
	ResponseBody []byte
}

// MaxKeptResponse is how much of a receiver's answer the delivery log
// keeps: enough for an error message, not a page.
const MaxKeptResponse = 1 << 10

// Send makes one attempt: a POST of the exact body with the signature,
// event id and timestamp headers, within the per-attempt time limit.
func (s *Sender) Send(ctx context.Context, r Request) Result {
	start := time.Now()
	res := s.send(ctx, r)
	res.Duration = time.Since(start)
	return res
}

func (s *Sender) send(ctx context.Context, r Request) Result {
	u, err := url.Parse(r.URL)
	if err != nil {
		return Result{Outcome: domain.Outcome{Refused: true}, Error: "invalid URL"}
	}
	if u.Scheme != "https" && !(u.Scheme == "http" && s.guard.HostAllowed(u.Hostname())) {
		return Result{Outcome: domain.Outcome{Refused: true}, Error: "destination refused: plain http is only allowed for operator-allowed hosts"}
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		return Result{Outcome: domain.Outcome{Refused: true}, Error: "invalid URL"}
	}
	for k, v := range Headers(r) {
		req.Header[k] = v
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return classifyError(ctx, err, s.timeout)
	}
	kept, _ := io.ReadAll(io.LimitReader(resp.Body, MaxKeptResponse))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBody))
	_ = resp.Body.Close()
	return Answered(resp.StatusCode, resp.Header, kept, s.TimeUnit)
}

// Answered is the result of an attempt the receiver answered with status,
// header and (the kept part of) body: an error unless 2xx (redirects are
// not followed), and the Retry-After of a 429 or 5xx, read in unit.
func Answered(status int, header http.Header, kept []byte, unit time.Duration) Result {
	out := Result{Outcome: domain.Outcome{StatusCode: status}, ResponseBody: kept}
	switch {
	case status >= 200 && status < 300:
	case status >= 300 && status < 400:
		out.Error = fmt.Sprintf("HTTP %d: redirects are not followed", status)
	default:
		out.Error = fmt.Sprintf("HTTP %d", status)
	}
	if ra := header.Get("Retry-After"); ra != "" && (status == 429 || status >= 500) {
		out.Outcome.RetryAfter = domain.ParseRetryAfter(ra, time.Now(), unit)
	}
	return out
}

// Headers are the headers of an attempt: the webhook's own request
// headers, then the platform's (which win): the three signatures, each
// over the exact body and with this attempt's time, the event's id and
// name, the webhook, the attempt's number, and the trace.
func Headers(r Request) http.Header {
	return HeadersAt(r, time.Now())
}

// HeadersAt are the headers of an attempt made at now.
func HeadersAt(r Request, now time.Time) http.Header {
	h := make(http.Header, len(r.Extra)+14)
	for k, v := range r.Extra {
		h.Set(k, v)
	}
	t := now.Unix()
	ts := strconv.FormatInt(t, 10)
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", UserAgent)
	h.Set(HeaderSignature, domain.Sign(r.Secret, r.Body))
	h.Set(HeaderElevenLabsSignature, domain.SignElevenLabs(r.Secret, r.Body, t))
	h.Set(HeaderStandardID, r.EventID)
	h.Set(HeaderStandardTimestamp, ts)
	h.Set(HeaderStandardSignature, domain.SignStandard(domain.StandardKey(r.Secret), r.EventID, t, r.Body))
	h.Set(HeaderEventID, r.EventID)
	h.Set(HeaderEvent, r.Event)
	h.Set(HeaderWebhookID, r.WebhookID)
	h.Set(HeaderTimestamp, ts)
	h.Set(HeaderAttempt, strconv.Itoa(max(r.Attempt, 1)))
	if r.Traceparent != "" {
		h.Set("Traceparent", r.Traceparent)
	}
	return h
}

func classifyError(ctx context.Context, err error, timeout time.Duration) Result {
	var refused *outbound.RefusedError
	if errors.As(err, &refused) {
		return Result{Outcome: domain.Outcome{Refused: true}, Error: refused.Error()}
	}
	var ne net.Error
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return Result{Outcome: domain.Outcome{NetworkErr: true}, Error: fmt.Sprintf("timed out after %s", timeout)}
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return Result{Outcome: domain.Outcome{NetworkErr: true}, Error: "DNS lookup failed: " + dnsErr.Err}
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return Result{Outcome: domain.Outcome{NetworkErr: true}, Error: "connection failed: " + opErr.Op + " " + errText(opErr.Err)}
	}
	return Result{Outcome: domain.Outcome{NetworkErr: true}, Error: "request failed: " + errText(errors.Unwrap(err))}
}

func errText(err error) string {
	if err == nil {
		return "unknown error"
	}
	return err.Error()
}
