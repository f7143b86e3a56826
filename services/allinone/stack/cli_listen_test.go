package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/pkg/wire"
	"github.com/voiceai-platform/voiceai/services/cli"
)

// voiceai webhooks listen relays deliveries to a local receiver, signed,
// on a stack that allows no private or plain-http destination: the
// receiver's answer is the delivery's outcome, and stopping deletes the
// relay webhook.
func TestCLIWebhooksListenRelaysSignedDeliveries(t *testing.T) {
	t.Parallel()
	s := startAdmin(t, func(c *Config) {
		c.Outbound.AllowHosts = "" // the local receiver is not allowed as a destination
	})
	const secret = "whsec_listen_test_0123456789abcdef"
	type got struct {
		eventID string
		body    []byte
		signed  bool
	}
	var received collected[got]
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		// Relayed, a delivery keeps every signature (and its time).
		v := verifyAll(secret, r, body)
		signed := v.service && v.sdk && v.standard
		received.add(got{r.Header.Get("X-Service-Event-Id"), body, signed})
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte("thanks"))
	}))
	t.Cleanup(rcv.Close)

	// A url webhook to that receiver is refused: the relay is the way.
	r := call(t, s, "POST", "/v1/convai/webhooks", adminKey, `{"url":"`+rcv.URL+`","events":["call_started"]}`)
	if r.Code != 422 {
		t.Fatalf("a plain-http loopback url was accepted: %d %s", r.Code, r.Body)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr testkit.LogBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, []string{"webhooks", "listen", "--forward-to", rcv.URL + "/hook", "--event", "call_started", "--secret", secret,
			"--base-url", "http://" + s.Addr, "--api-key", adminKey}, &stdout, &stderr)
	}()
	var hook string
	eventually(t, 10*time.Second, "the relay webhook exists", func() bool {
		var list struct {
			Webhooks []struct {
				ID    string `json:"webhook_id"`
				Relay bool   `json:"relay"`
			} `json:"data"`
		}
		_ = json.Unmarshal(call(t, s, "GET", "/v1/convai/webhooks", adminKey, "").Body, &list)
		for _, w := range list.Webhooks {
			if w.Relay {
				hook = w.ID
			}
		}
		return hook != ""
	})

	eventID := sendCallEvent(t, s, "call_started", "call_listen")
	first := received.await(t, 15*time.Second, "the delivery is relayed", 1)[0]
	if first.eventID != eventID || !first.signed || !json.Valid(first.body) {
		t.Fatalf("relayed %+v, want event %s signed", first, eventID)
	}
	eventually(t, 10*time.Second, "the receiver's answer is the outcome", func() bool {
		for _, e := range hookLog(t, s, hook, "status=success").RecentDeliveries {
			if e.EventID == eventID && e.ResponseBody == "thanks" {
				return true
			}
		}
		return false
	})

	cancel()
	if code := <-done; code != cli.ExitOK {
		t.Fatalf("listen exited %d: %s", code, stderr.String())
	}
	wantError(t, call(t, s, "GET", "/v1/convai/webhooks/"+hook, adminKey, ""), 404, "webhook_not_found")
	if !bytes.Contains([]byte(stdout.String()), []byte(eventID+" -> 202")) {
		t.Fatalf("listen's output: %s", stdout.String())
	}
}

// The relay protocol by hand: a poll hands over the delivery with its
// signed headers, the reported answer is its outcome, and a token is
// good only for its own webhook.
func TestWebhookRelayProtocol(t *testing.T) {
	t.Parallel()
	s := startAdmin(t)
	r := call(t, s, "POST", "/v1/convai/webhooks", adminKey, `{"relay":true,"url":"https://example.com","events":["call_ended"]}`)
	if r.Code != 422 {
		t.Fatalf("a relay webhook with a url: %d %s", r.Code, r.Body)
	}
	// A delivery made while no client polls fails as unreachable and is
	// retried: a second after.
	r = call(t, s, "POST", "/v1/convai/webhooks", adminKey, `{"relay":true,"events":["call_ended"],"retry_config":{"max_retries":5,"retry_delay":1,"exponential_backoff":false}}`)
	if r.Code != 201 || r.JSON(t)["relay"] != true || r.JSON(t)["url"] != "" {
		t.Fatalf("create relay webhook: %d %s", r.Code, r.Body)
	}
	hook, secret := r.JSON(t)["webhook_id"].(string), r.JSON(t)["secret"].(string)
	other := call(t, s, "POST", "/v1/convai/webhooks", adminKey, `{"relay":true,"events":["call_ended"]}`).JSON(t)["webhook_id"].(string)

	if r := call(t, s, "POST", "/v1/voiceai/webhooks/"+hook+"/relay/next", adminKey, `{"wait_ms":0}`); r.Code != 200 || r.JSON(t)["delivery"] != nil {
		t.Fatalf("an empty poll: %d %s", r.Code, r.Body)
	}
	r = call(t, s, "POST", "/v1/convai/events", adminKey, `{"event":"call_ended","data":{"call_id":"call_relay"}}`)
	eventID := r.JSON(t)["event_id"].(string)
	var next wire.RelayNext
	deadline := time.Now().Add(30 * time.Second)
	for next.Delivery == nil { // each poll waits up to 5 s for the dispatcher's hand-over
		if time.Now().After(deadline) {
			t.Fatal("no delivery was handed over within 30s")
		}
		r = call(t, s, "POST", "/v1/voiceai/webhooks/"+hook+"/relay/next", adminKey, `{"wait_ms":5000}`)
		if r.Code != 200 || json.Unmarshal(r.Body, &next) != nil {
			t.Fatalf("poll: %d %s", r.Code, r.Body)
		}
	}
	d := next.Delivery
	if d.Headers["X-Service-Event-Id"] != eventID || !testkit.SignedBy([]byte(secret), []byte(d.Body), d.Headers["X-Service-Signature"]) {
		t.Fatalf("relayed delivery: %+v", d)
	}
	result := `{"token":"` + d.Token + `","status_code":500,"response_body":"local app crashed"}`
	if r := call(t, s, "POST", "/v1/voiceai/webhooks/"+other+"/relay/result", adminKey, result); r.Code != 422 || !bytes.Contains(r.Body, []byte(`"loc":["body","token"]`)) {
		t.Fatalf("another webhook's token: %d %s", r.Code, r.Body)
	}
	if r := call(t, s, "POST", "/v1/voiceai/webhooks/"+hook+"/relay/result", adminKey, result); r.Code != 204 {
		t.Fatalf("result: %d %s", r.Code, r.Body)
	}
	eventually(t, 10*time.Second, "the reported answer is the outcome", func() bool {
		for _, e := range hookLog(t, s, hook, "status=failed").RecentDeliveries {
			if e.EventID == eventID && e.ResponseBody == "local app crashed" {
				return true
			}
		}
		return false
	})
	url := call(t, s, "POST", "/v1/convai/webhooks", adminKey, `{"url":"https://example.com/hook","events":["call_ended"]}`).JSON(t)["webhook_id"].(string)
	wantError(t, call(t, s, "POST", "/v1/voiceai/webhooks/"+url+"/relay/next", adminKey, `{"wait_ms":0}`), 409, "not_a_relay_webhook")
}
