package multiprocess

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

// hit is one request the webhook receiver saw.
type hit struct {
	eventID, webhookID, event, attempt string
	body                               []byte
	sigValid                           bool
	open                               bool // the receiver has not finished with it
	answered                           bool // the receiver answered 200 on a live connection
}

// gatedReceiver records every delivery, checks its signature itself (raw
// body, HMAC-SHA256, constant-time compare), and holds every request
// until the gate opens; a request whose sender is gone ends unanswered.
type gatedReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	hits   []*hit
	secret []byte
	gate   chan struct{}
	once   sync.Once
}

func newGatedReceiver(t *testing.T) *gatedReceiver {
	rc := &gatedReceiver{gate: make(chan struct{})}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		h := &hit{
			eventID: r.Header.Get("X-Service-Event-Id"), webhookID: r.Header.Get("X-Service-Webhook-Id"),
			event: r.Header.Get("X-Service-Event"), attempt: r.Header.Get("X-Service-Delivery-Attempt"), body: body,
			sigValid: testkit.SignedBy(rc.secret, body, r.Header.Get("X-Service-Signature")), open: true,
		}
		rc.hits = append(rc.hits, h)
		rc.mu.Unlock()
		answered := false
		select {
		case <-rc.gate:
			w.WriteHeader(http.StatusOK)
			answered = true
		case <-r.Context().Done(): // the sender gave up or died
		}
		rc.mu.Lock()
		h.open, h.answered = false, answered
		rc.mu.Unlock()
	}))
	t.Cleanup(rc.Close)
	t.Cleanup(rc.release) // runs before Close, which waits for the handlers
	return rc
}

// release opens the gate: held and later requests are answered 200.
func (rc *gatedReceiver) release() { rc.once.Do(func() { close(rc.gate) }) }

// holding returns the positions of the requests the receiver is holding.
func (rc *gatedReceiver) holding() []int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []int
	for i, h := range rc.hits {
		if h.open {
			out = append(out, i)
		}
	}
	return out
}

// allEnded reports whether every request at positions has ended.
func (rc *gatedReceiver) allEnded(positions []int) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, i := range positions {
		if rc.hits[i].open {
			return false
		}
	}
	return true
}

// snapshot copies every request seen so far.
func (rc *gatedReceiver) snapshot() []hit {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := make([]hit, len(rc.hits))
	for i, h := range rc.hits {
		out[i] = *h
	}
	return out
}

func post(t *testing.T, url, idempotencyKey, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), "POST", url, strings.NewReader(body))
	req.Header.Set("x-api-key", adminKey)
	req.Header.Set("Content-Type", "application/json")
	if idempotencyKey != "" {
		req.Header.Set("Idempotency-Key", idempotencyKey)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// A webhook-dispatcher process killed (SIGKILL) while it has deliveries in
// flight loses nothing: its unacknowledged jobs go to the other replica
// after AckWait, every event reaches the receiver with a 200, each
// duplicate carries the event's id and exact bytes, every signature
// verifies, and the work queue ends empty.
func TestWebhookDispatcherKilledMidStream(t *testing.T) {
	const (
		events  = 300
		workers = 8 // deliveries in flight per dispatcher
	)
	rc := newGatedReceiver(t)

	c := newCluster(t)
	// The first dispatcher's deliveries must still be held when it is
	// killed, after a second dispatcher has started and delivered: the
	// attempt time-out bounds how long that start may take (seconds on a
	// busy machine), and the AckWait just above it how long the killed
	// one's jobs wait to be delivered again.
	hooksEnv := []string{"VOICEAI_WEBHOOK_ALLOW_HOSTS=127.0.0.1", "VOICEAI_WEBHOOK_TIMEOUT=20s"}
	// One workspace alone may have every worker (no turns kept for
	// others): the first dispatcher's workers are all busy with deliveries
	// it has not settled.
	dispatcherEnv := slices.Concat(hooksEnv, []string{fmt.Sprintf("VOICEAI_WEBHOOK_WORKERS=%d", workers), "VOICEAI_WEBHOOK_ACK_WAIT=21s",
		"VOICEAI_WEBHOOK_PER_WORKSPACE=-1"})
	c.start("identity")
	c.start("webhooks", hooksEnv...)
	doomed := c.start("webhook-dispatcher", dispatcherEnv...)
	gw := c.gateway("VOICEAI_RATE_LIMIT_PER_MINUTE=100000", "VOICEAI_RATE_LIMIT_PER_HOUR=100000")

	// The webhook, created through the gateway once the service answers
	// (a retried create answers the first one).
	var hook struct {
		ID     string `json:"webhook_id"`
		Secret string `json:"secret"`
	}
	eventually(t, 30*time.Second, "the webhook is created", func() bool {
		code, b := post(t, gw+"/v1/convai/webhooks", "multiprocess-hook",
			`{"url":"`+rc.URL+`/hook","events":["call_started"],"retry_config":{"max_retries":10,"retry_delay":1,"exponential_backoff":false}}`)
		return code == http.StatusCreated && json.Unmarshal(b, &hook) == nil && hook.ID != "" && hook.Secret != ""
	})
	rc.mu.Lock()
	rc.secret = []byte(hook.Secret)
	rc.mu.Unlock()

	// Ingest the events through the gateway.
	ids := make([]string, events)
	var wg sync.WaitGroup
	next := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				code, b := post(t, gw+"/v1/convai/events", fmt.Sprintf("ingest-%d", i), fmt.Sprintf(`{"event":"call_started","data":{"call_id":"c%d"}}`, i))
				var r struct {
					EventID string `json:"event_id"`
				}
				if code != http.StatusAccepted || json.Unmarshal(b, &r) != nil || r.EventID == "" {
					t.Errorf("ingest %d: %d %s", i, code, b)
				}
				ids[i] = r.EventID
			}
		}()
	}
	for i := range events {
		next <- i
	}
	close(next)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	index := map[string]int{}
	for i, id := range ids {
		if _, dup := index[id]; dup {
			t.Fatalf("event id %s answered twice", id)
		}
		index[id] = i
	}

	// The first dispatcher, alone so far, holds as many deliveries as it
	// has workers: every one of them is its own.
	eventually(t, 30*time.Second, "the first dispatcher holds its deliveries", func() bool { return len(rc.holding()) == workers })
	held := rc.holding()
	heldAt := time.Now()
	// A second replica joins and delivers too.
	c.start("webhook-dispatcher", dispatcherEnv...)
	eventually(t, 30*time.Second, "the second dispatcher delivers", func() bool { return len(rc.holding()) > workers })

	// Kill the first one mid-delivery. Its deliveries are all still
	// unanswered, so it has acknowledged none of them and holds no other
	// (its workers are all busy with these).
	if slices.ContainsFunc(held, func(i int) bool { return rc.allEnded([]int{i}) }) {
		t.Fatalf("a delivery of the first dispatcher ended before the kill, %s after it was held (the second dispatcher took longer than the attempt time-out to start)", time.Since(heldAt).Round(time.Millisecond))
	}
	killedAfter := time.Since(heldAt)
	doomed.kill()
	// Its connections are gone: the receiver sees each of its requests end
	// unanswered before it answers anything, so no answer goes to it.
	eventually(t, 10*time.Second, "the killed dispatcher's requests end", func() bool { return rc.allEnded(held) })
	rc.release()

	// Every event is answered 200 (the killed one's jobs after their
	// AckWait).
	answered := func() int {
		ids := map[string]bool{}
		for _, h := range rc.snapshot() {
			if h.answered {
				ids[h.eventID] = true
			}
		}
		return len(ids)
	}
	defer func() {
		if t.Failed() {
			t.Logf("%d of %d events answered", answered(), events)
		}
	}()
	eventually(t, 60*time.Second, "every event delivered", func() bool { return answered() == events })
	// Terminal state: every job acknowledged, none left in the work queue
	// or held by a consumer, so no further delivery can happen.
	js := testenv.JetStreamAt(t, c.natsURL)
	ctx := context.Background()
	eventually(t, 30*time.Second, "the delivery queue is empty", func() bool {
		str, err := js.Stream(ctx, "WEBHOOK_DELIVERIES")
		if err != nil {
			return false
		}
		cons, err := js.Consumer(ctx, "WEBHOOK_DELIVERIES", "webhooks-deliver")
		if err != nil {
			return false
		}
		ci, err := cons.Info(ctx)
		return err == nil && str.CachedInfo().State.Msgs == 0 && ci.NumAckPending == 0 && ci.NumPending == 0
	})

	hits := rc.snapshot()
	bodies := map[string]string{}
	seen := map[string]int{}
	for _, h := range hits {
		i, ok := index[h.eventID]
		if !ok || !h.sigValid || h.webhookID != hook.ID || h.event != "call_started" {
			t.Fatalf("unexpected delivery: event %q webhook %q name %q signature valid %v", h.eventID, h.webhookID, h.event, h.sigValid)
		}
		// A duplicate carries the event's id and the same bytes: the id
		// names the event whose data it holds.
		var env struct {
			Event string `json:"event"`
			Data  struct {
				CallID string `json:"call_id"`
			} `json:"data"`
		}
		if err := json.Unmarshal(h.body, &env); err != nil || env.Event != "call_started" || env.Data.CallID != fmt.Sprintf("c%d", i) {
			t.Fatalf("delivery of %s (event %d) carries %s", h.eventID, i, h.body)
		}
		if prev, ok := bodies[h.eventID]; ok && prev != string(h.body) {
			t.Fatalf("duplicate of %s has other bytes:\n%s\n%s", h.eventID, prev, h.body)
		}
		bodies[h.eventID] = string(h.body)
		seen[h.eventID]++
	}
	// What the killed dispatcher held was delivered again, by the other.
	for _, i := range held {
		h := hits[i]
		if h.answered || seen[h.eventID] < 2 {
			t.Fatalf("event %s, held by the killed dispatcher, delivered %d times (answered to the dead one: %v)", h.eventID, seen[h.eventID], h.answered)
		}
	}
	dups := len(hits) - len(seen)
	t.Logf("%d events, %d requests (%d duplicates), %d held by the dispatcher killed %s after it held them",
		events, len(hits), dups, len(held), killedAfter.Round(time.Millisecond))
}
