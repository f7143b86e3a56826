// Package sendertest is the conformance suite of app.Sender: every
// implementation (HTTP through the outbound guard and the relay on NATS,
// in memory) makes one signed attempt of a delivery, reports what the
// receiver answered, and tells a refused destination from one that could
// not be reached.
package sendertest

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/delivery"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// Answer is what a receiver answers an attempt.
type Answer struct {
	Status     int
	RetryAfter string // its Retry-After header, "" for none
	Body       []byte
}

// Receiver is a webhook's endpoint.
type Receiver func(header http.Header, body []byte) Answer

// Opener opens a sender whose operator allowed one private host, and
// endpoint, which starts an endpoint on that host, reached over plain
// http, and returns its URL (receive nil: an endpoint nobody listens at).
type Opener func(t *testing.T) (s app.Sender, endpoint func(receive Receiver) string)

var secret = []byte("whsec_conformance")

func request(url string) delivery.Request {
	return delivery.Request{
		URL: url, Secret: secret, Body: []byte(`{"type":"ticket_created","data":{"ticket_id":"tkt_1"}}`), Event: "ticket_created",
		EventID: "evt_1", WebhookID: "whk_1", Attempt: 2, Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		Extra: map[string]string{"X-Team": "qa", delivery.HeaderEventID: "forged"},
	}
}

var webhook = &webhooksv1.Webhook{WebhookId: "whk_1", WorkspaceId: "ws_a"}

// received keeps what an endpoint was sent.
type received struct {
	mu      sync.Mutex
	headers []http.Header
	bodies  [][]byte
}

func (r *received) answering(a Answer) Receiver {
	return func(h http.Header, body []byte) Answer {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.headers, r.bodies = append(r.headers, h.Clone()), append(r.bodies, bytes.Clone(body))
		return a
	}
}

func (r *received) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.bodies)
}

// Run checks open against what app.Sender promises.
func Run(t *testing.T, open Opener) {
	ctx := context.Background()

	t.Run("a 2xx: the exact body, signed, with the platform's headers over the webhook's own", func(t *testing.T) {
		s, endpoint := open(t)
		var got received
		req := request(endpoint(got.answering(Answer{Status: 202, Body: []byte("thanks")})))
		res := s.Send(ctx, webhook, req)
		if res.Outcome != (domain.Outcome{StatusCode: 202}) || res.Error != "" || string(res.ResponseBody) != "thanks" || res.Duration < 0 {
			t.Fatalf("result %+v", res)
		}
		if got.count() != 1 || !bytes.Equal(got.bodies[0], req.Body) {
			t.Fatalf("received %d bodies: %q", got.count(), got.bodies)
		}
		h := got.headers[0]
		for name, want := range map[string]string{
			delivery.HeaderSignature: domain.Sign(secret, req.Body), delivery.HeaderEventID: "evt_1", delivery.HeaderEvent: "ticket_created",
			delivery.HeaderWebhookID: "whk_1", delivery.HeaderAttempt: "2", delivery.HeaderStandardID: "evt_1",
			"Content-Type": "application/json", "X-Team": "qa", "Traceparent": req.Traceparent,
		} {
			if h.Get(name) != want {
				t.Errorf("header %s: %q, want %q", name, h.Get(name), want)
			}
		}
		at, err := strconv.ParseInt(h.Get(delivery.HeaderTimestamp), 10, 64)
		if err != nil || h.Get(delivery.HeaderElevenLabsSignature) != domain.SignElevenLabs(secret, req.Body, at) {
			t.Errorf("the ElevenLabs signature %q does not sign the body at %q", h.Get(delivery.HeaderElevenLabsSignature), h.Get(delivery.HeaderTimestamp))
		}
	})

	t.Run("a refusal: its status, its answer cut to what is kept, Retry-After when it is busy", func(t *testing.T) {
		s, endpoint := open(t)
		var got received
		long := bytes.Repeat([]byte("e"), delivery.MaxKeptResponse+500)
		res := s.Send(ctx, webhook, request(endpoint(got.answering(Answer{Status: 503, RetryAfter: "7", Body: long}))))
		if res.Outcome.StatusCode != 503 || res.Outcome.NetworkErr || res.Outcome.Refused || res.Error == "" ||
			!bytes.Equal(res.ResponseBody, long[:delivery.MaxKeptResponse]) || res.Outcome.RetryAfter <= 0 {
			t.Fatalf("result %+v (%d bytes kept)", res.Outcome, len(res.ResponseBody))
		}
		res = s.Send(ctx, webhook, request(endpoint(got.answering(Answer{Status: 400, RetryAfter: "7"}))))
		if res.Outcome != (domain.Outcome{StatusCode: 400}) || res.Error == "" {
			t.Fatalf("a 400 (its Retry-After ignored): %+v %q", res.Outcome, res.Error)
		}
		res = s.Send(ctx, webhook, request(endpoint(got.answering(Answer{Status: 302}))))
		if res.Outcome != (domain.Outcome{StatusCode: 302}) || res.Error == "" {
			t.Fatalf("a redirect is not followed: %+v %q", res.Outcome, res.Error)
		}
	})

	t.Run("a destination nobody listens at is a network error", func(t *testing.T) {
		s, endpoint := open(t)
		res := s.Send(ctx, webhook, request(endpoint(nil)))
		if res.Outcome != (domain.Outcome{NetworkErr: true}) || res.Error == "" {
			t.Fatalf("result %+v %q", res.Outcome, res.Error)
		}
	})

	t.Run("plain http to a host the operator did not allow is refused, unsent", func(t *testing.T) {
		s, _ := open(t)
		for _, url := range []string{"http://hooks.example.com/qa", "http://169.254.169.254/latest", "::not a url"} {
			res := s.Send(ctx, webhook, request(url))
			if res.Outcome != (domain.Outcome{Refused: true}) || res.Error == "" {
				t.Fatalf("%s: %+v %q", url, res.Outcome, res.Error)
			}
		}
	})

	t.Run("the allowed host, and no other, is allowed", func(t *testing.T) {
		s, endpoint := open(t)
		host := hostOf(t, endpoint(nil))
		if !s.HostAllowed(host) {
			t.Fatalf("the allowed host %s is refused", host)
		}
		for _, h := range []string{"hooks.example.com", "169.254.169.254", "10.0.0.8"} {
			if s.HostAllowed(h) {
				t.Fatalf("%s is allowed", h)
			}
		}
	})

	t.Run("a relay webhook nobody polls for is a network error", func(t *testing.T) {
		s, endpoint := open(t)
		var got received
		relay := &webhooksv1.Webhook{WebhookId: "whk_relay", WorkspaceId: "ws_a", Relay: true}
		req := request(endpoint(got.answering(Answer{Status: 200})))
		req.WebhookID = "whk_relay"
		res := s.Send(ctx, relay, req)
		if res.Outcome != (domain.Outcome{NetworkErr: true}) || res.Error == "" || got.count() != 0 {
			t.Fatalf("result %+v %q, %d posted to its URL", res.Outcome, res.Error, got.count())
		}
	})
}

func hostOf(t *testing.T, url string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req.URL.Hostname()
}
