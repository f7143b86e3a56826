package delivery

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/outbound"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

func req(url string) Request {
	return Request{URL: url, Secret: []byte("s3cret-s3cret-s3cret"), Body: []byte(`{"event":"call_started"}`), Event: "call_started", EventID: "evt_1", WebhookID: "whk_1", Attempt: 1}
}

// Every private destination is refused before a connection is made:
// literal IPs of each kind, IPv6 forms, and a host name that resolves to
// loopback.
func TestSSRFRefusals(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
	s := NewSender(outbound.NewGuard(nil), 2*time.Second)
	for _, u := range []string{
		"https://127.0.0.1:" + port + "/h",
		"https://localhost:" + port + "/h", // a name resolving to loopback
		"https://[::1]:" + port + "/h",
		"https://[::ffff:127.0.0.1]:" + port + "/h",
		"https://[fe80::1]:" + port + "/h",
		"https://169.254.169.254/latest/meta-data",
		"https://[fd00:ec2::254]/latest",
		"https://10.0.0.1/h", "https://192.168.0.10/h", "https://172.16.0.1/h", "https://100.64.1.1/h",
		"https://0.0.0.0:" + port + "/h",
		"http://127.0.0.1:" + port + "/h", // plain http is never allowed without the allow list
	} {
		res := s.Send(context.Background(), req(u))
		if !res.Outcome.Refused || !strings.Contains(res.Error, "refused") {
			t.Errorf("%s: not refused: %+v", u, res)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the receiver was reached %d times", n)
	}
	// The operator's allow list opens a host, over plain http too.
	open := NewSender(outbound.NewGuard([]string{"127.0.0.1"}), 2*time.Second)
	if res := open.Send(context.Background(), req(srv.URL+"/h")); res.Outcome.StatusCode != 200 || res.Outcome.Refused {
		t.Fatalf("allowed host: %+v", res)
	}
	// An allowed name does not open its addresses to other names.
	if res := open.Send(context.Background(), req("https://localhost:"+port+"/h")); !res.Outcome.Refused {
		t.Fatalf("localhost reached through 127.0.0.1's allowance: %+v", res)
	}
	if hits.Load() != 1 {
		t.Fatalf("hits %d", hits.Load())
	}
}

func TestSendSignsAndClassifies(t *testing.T) {
	secret := []byte("s3cret-s3cret-s3cret")
	var status atomic.Int32
	status.Store(200)
	hang := make(chan struct{}) // a slow receiver answers only when the test ends
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m := hmac.New(sha256.New, secret)
		m.Write(body)
		want := "sha256=" + hex.EncodeToString(m.Sum(nil))
		if !hmac.Equal([]byte(want), []byte(r.Header.Get(HeaderSignature))) || r.Header.Get(HeaderEventID) != "evt_1" || r.Header.Get(HeaderTimestamp) == "" {
			w.WriteHeader(401)
			return
		}
		switch status.Load() {
		case 302:
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		case 503:
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(503)
		case 0:
			select { // no answer before the sender gives up
			case <-hang:
			case <-r.Context().Done():
			}
		default:
			w.WriteHeader(int(status.Load()))
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(hang) }) // runs first: Close waits for the handler
	s := NewSender(outbound.NewGuard([]string{"127.0.0.1"}), 100*time.Millisecond)
	if res := s.Send(context.Background(), req(srv.URL)); res.Outcome.StatusCode != 200 || res.Error != "" {
		t.Fatalf("signed delivery: %+v", res)
	}
	status.Store(302)
	if res := s.Send(context.Background(), req(srv.URL)); res.Outcome.StatusCode != 302 || !strings.Contains(res.Error, "redirect") {
		t.Fatalf("redirect: %+v", res)
	}
	status.Store(503)
	if res := s.Send(context.Background(), req(srv.URL)); res.Outcome.StatusCode != 503 || res.Outcome.RetryAfter != 3*time.Second {
		t.Fatalf("Retry-After: %+v", res)
	}
	status.Store(0)
	if res := s.Send(context.Background(), req(srv.URL)); !res.Outcome.NetworkErr || !strings.Contains(res.Error, "timed out") {
		t.Fatalf("timeout: %+v", res)
	}
}

// Every attempt carries the three signatures over the same bytes and with
// its own time, each checked here as its verifier does; the webhook's
// request headers come along but replace none of the platform's.
func TestHeadersCarryEverySignature(t *testing.T) {
	raw := []byte("0123456789abcdef0123456789abcdef")
	secret := "whsec_" + base64.StdEncoding.EncodeToString(raw)
	r := Request{Secret: []byte(secret), Body: []byte(`{"event":"ticket_created"}`), EventID: "evt_9", Event: "ticket_created", WebhookID: "whk_1", Attempt: 2,
		Extra: map[string]string{"X-Team": "qa", "content-type": "text/plain", "Elevenlabs-Signature": "t=1,v0=00", "Webhook-Id": "forged"}}
	at := time.Unix(1_800_000_123, 0)
	h := HeadersAt(r, at)
	hexMAC := func(key []byte, parts ...string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(strings.Join(parts, ".")))
		return m.Sum(nil)
	}
	if got := h.Get(HeaderSignature); got != "sha256="+hex.EncodeToString(hexMAC([]byte(secret), string(r.Body))) {
		t.Errorf("X-Service-Signature %q", got)
	}
	if got := h.Get(HeaderElevenLabsSignature); got != "t=1800000123,v0="+hex.EncodeToString(hexMAC([]byte(secret), "1800000123", string(r.Body))) {
		t.Errorf("ElevenLabs-Signature %q", got)
	}
	if h.Get(HeaderStandardID) != "evt_9" || h.Get(HeaderStandardTimestamp) != "1800000123" || h.Get(HeaderTimestamp) != "1800000123" {
		t.Errorf("ids and times: %v", h)
	}
	if got := h.Get(HeaderStandardSignature); got != "v1,"+base64.StdEncoding.EncodeToString(hexMAC(raw, "evt_9", "1800000123", string(r.Body))) {
		t.Errorf("webhook-signature %q (keyed with the decoded secret)", got)
	}
	if h.Get("X-Team") != "qa" || h.Get("Content-Type") != "application/json" || len(h.Values("Content-Type")) != 1 {
		t.Errorf("request headers: %v", h)
	}
	// A secret that is not whsec_<base64> keys Standard Webhooks with its
	// own bytes.
	r.Secret = []byte("plain-secret-0123")
	h = HeadersAt(r, at)
	if got := h.Get(HeaderStandardSignature); got != "v1,"+base64.StdEncoding.EncodeToString(hexMAC(r.Secret, "evt_9", "1800000123", string(r.Body))) {
		t.Errorf("webhook-signature of a custom secret %q", got)
	}
}

// The signing a delivery adds beyond X-Service-Signature (ElevenLabs and
// Standard Webhooks) costs a few microseconds: the bench prints it too.
func BenchmarkAddedSigning(b *testing.B) {
	secret, _ := base64.StdEncoding.DecodeString("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	key := []byte("whsec_" + base64.StdEncoding.EncodeToString(secret))
	body := []byte(strings.Repeat("x", 2048))
	for b.Loop() {
		_ = domain.SignElevenLabs(key, body, 1_800_000_000)
		_ = domain.SignStandard(domain.StandardKey(key), "evt_1", 1_800_000_000, body)
	}
}
