// Package relaytest is the conformance suite of app.Relay, with the
// sender that hands relay webhooks' attempts to it: every implementation
// (NATS request and reply, in memory) gives each attempt to one client
// polling its webhook, makes that client's answer the attempt's outcome,
// and lets a poll with nothing to take end empty.
package relaytest

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/delivery"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// Opener opens a relay over fresh transport, and a sender that hands
// relay webhooks' attempts to it with a short attempt time limit (a
// second at most).
type Opener func(t *testing.T) (relay app.Relay, sender app.Sender)

func webhook(ws, id string) *webhooksv1.Webhook {
	return &webhooksv1.Webhook{WebhookId: id, WorkspaceId: ws, Relay: true}
}

func request(webhookID, eventID string) delivery.Request {
	return delivery.Request{Secret: []byte("whsec_relay"), Body: []byte(`{"event_id":"` + eventID + `"}`), Event: "call_ended", EventID: eventID, WebhookID: webhookID, Attempt: 1}
}

// client polls one webhook, as a relay client does, and answers what it
// takes with answer.
type client struct {
	mu    sync.Mutex
	taken []*app.RelayRequest
}

func (c *client) poll(ctx context.Context, t *testing.T, rl app.Relay, ws, webhookID string, answer func(*app.RelayRequest) (int, []byte, string)) {
	for ctx.Err() == nil {
		wait, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		r, err := rl.Take(wait, ws, webhookID)
		cancel()
		if err != nil {
			t.Errorf("poll: %v", err)
			return
		}
		if r == nil {
			continue
		}
		c.mu.Lock()
		c.taken = append(c.taken, r)
		c.mu.Unlock()
		status, body, errText := answer(r)
		if err := rl.Answer(ctx, r.Reply, status, body, errText); err != nil {
			t.Errorf("answer: %v", err)
		}
	}
}

func (c *client) takenEvents() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, r := range c.taken {
		out = append(out, r.Headers[delivery.HeaderEventID])
	}
	return out
}

// polling starts a client polling until the test ends.
func polling(t *testing.T, rl app.Relay, ws, webhookID string, answer func(*app.RelayRequest) (int, []byte, string)) *client {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	c := &client{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.poll(ctx, t, rl, ws, webhookID, answer)
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return c
}

// sent makes the attempt once a client polls for it: an attempt while
// none is polling yet fails at once, as "no relay client is listening".
func sent(t *testing.T, s app.Sender, w *webhooksv1.Webhook, r delivery.Request) delivery.Result {
	t.Helper()
	var res delivery.Result
	testkit.Eventually(t, 10*time.Second, "a polling client takes the attempt", func() bool {
		res = s.Send(context.Background(), w, r)
		return !strings.Contains(res.Error, "no relay client")
	})
	return res
}

func answering(status int, body string, errText string) func(*app.RelayRequest) (int, []byte, string) {
	return func(*app.RelayRequest) (int, []byte, string) { return status, []byte(body), errText }
}

// Run checks open against what app.Relay promises.
func Run(t *testing.T, open Opener) {
	t.Run("a poll with nothing to take ends empty when its wait or its client ends", func(t *testing.T) {
		rl, _ := open(t)
		wait, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if r, err := rl.Take(wait, "ws_a", "whk_1"); r != nil || err != nil {
			t.Fatalf("after its wait: %+v %v", r, err)
		}
		gone, hangUp := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, hangUp)
		if r, err := rl.Take(gone, "ws_a", "whk_1"); r != nil || err != nil {
			t.Fatalf("after the client hung up: %+v %v", r, err)
		}
	})

	t.Run("an attempt reaches the client polling its webhook, and its answer is the outcome", func(t *testing.T) {
		rl, s := open(t)
		c := polling(t, rl, "ws_a", "whk_1", answering(201, "stored", ""))
		req := request("whk_1", "evt_1")
		res := sent(t, s, webhook("ws_a", "whk_1"), req)
		if res.Outcome != (domain.Outcome{StatusCode: 201}) || res.Error != "" || string(res.ResponseBody) != "stored" {
			t.Fatalf("result %+v %q %q", res.Outcome, res.Error, res.ResponseBody)
		}
		c.mu.Lock()
		got := c.taken[0]
		c.mu.Unlock()
		if !bytes.Equal(got.Body, req.Body) || got.Reply == "" || got.Headers[delivery.HeaderSignature] != domain.Sign(req.Secret, req.Body) ||
			got.Headers[delivery.HeaderEvent] != "call_ended" || got.Headers[delivery.HeaderWebhookID] != "whk_1" {
			t.Fatalf("the client took %+v", got)
		}
	})

	t.Run("a local receiver's failure: a refusal is its status, an unreachable one a network error", func(t *testing.T) {
		rl, s := open(t)
		long := strings.Repeat("e", delivery.MaxKeptResponse+100)
		polling(t, rl, "ws_a", "whk_500", answering(500, long, ""))
		polling(t, rl, "ws_a", "whk_down", answering(0, "", "connection refused"))
		res := sent(t, s, webhook("ws_a", "whk_500"), request("whk_500", "evt_1"))
		if res.Outcome != (domain.Outcome{StatusCode: 500}) || res.Error == "" || string(res.ResponseBody) != long[:delivery.MaxKeptResponse] {
			t.Fatalf("a 500: %+v %q (%d bytes kept)", res.Outcome, res.Error, len(res.ResponseBody))
		}
		res = sent(t, s, webhook("ws_a", "whk_down"), request("whk_down", "evt_2"))
		if res.Outcome != (domain.Outcome{NetworkErr: true}) || !strings.Contains(res.Error, "connection refused") {
			t.Fatalf("unreachable: %+v %q", res.Outcome, res.Error)
		}
	})

	t.Run("each attempt goes to one of the clients polling its webhook, none to another webhook's", func(t *testing.T) {
		rl, s := open(t)
		a := polling(t, rl, "ws_a", "whk_1", answering(200, "", ""))
		b := polling(t, rl, "ws_a", "whk_1", answering(200, "", ""))
		other := polling(t, rl, "ws_a", "whk_2", answering(200, "", ""))
		elsewhere := polling(t, rl, "ws_b", "whk_1", answering(200, "", ""))
		for _, id := range []string{"evt_1", "evt_2", "evt_3", "evt_4"} {
			if res := sent(t, s, webhook("ws_a", "whk_1"), request("whk_1", id)); res.Outcome.StatusCode != 200 {
				t.Fatalf("%s: %+v %q", id, res.Outcome, res.Error)
			}
		}
		got := append(a.takenEvents(), b.takenEvents()...)
		slices.Sort(got)
		if !slices.Equal(got, []string{"evt_1", "evt_2", "evt_3", "evt_4"}) {
			t.Fatalf("the two clients took %v", got)
		}
		if n := len(other.takenEvents()) + len(elsewhere.takenEvents()); n != 0 {
			t.Fatalf("another webhook's clients took %d", n)
		}
	})

	t.Run("a client that takes an attempt and never answers times it out", func(t *testing.T) {
		rl, s := open(t)
		silent := make(chan struct{})
		polling(t, rl, "ws_a", "whk_1", func(*app.RelayRequest) (int, []byte, string) {
			<-silent
			return 200, nil, ""
		})
		t.Cleanup(func() { close(silent) }) // before the client stops: cleanups run last first
		res := sent(t, s, webhook("ws_a", "whk_1"), request("whk_1", "evt_1"))
		if res.Outcome != (domain.Outcome{NetworkErr: true}) || res.Error == "" {
			t.Fatalf("result %+v %q", res.Outcome, res.Error)
		}
	})

	t.Run("an answer nobody waits for any more is no error", func(t *testing.T) {
		rl, _ := open(t)
		if err := rl.Answer(context.Background(), "_INBOX.gone", 200, []byte("late"), ""); err != nil {
			t.Fatal(err)
		}
	})
}
