package stack

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/services/webhooks/delivery"
)

// hangingReceiver holds every request until released (or its client
// gives up at the attempt time-out), and counts those it holds.
type hangingReceiver struct {
	*httptest.Server
	release chan struct{}

	mu              sync.Mutex
	holding, most   int
	firstAttemptsOf map[string]string // event id: the attempt its first request said
}

func newHangingReceiver(t *testing.T) *hangingReceiver {
	h := &hangingReceiver{release: make(chan struct{}), firstAttemptsOf: map[string]string{}}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.holding++
		h.most = max(h.most, h.holding)
		if id := r.Header.Get(delivery.HeaderEventID); h.firstAttemptsOf[id] == "" {
			h.firstAttemptsOf[id] = r.Header.Get(delivery.HeaderAttempt)
		}
		h.mu.Unlock()
		select {
		case <-h.release:
		case <-r.Context().Done():
		}
		h.mu.Lock()
		h.holding--
		h.mu.Unlock()
	}))
	t.Cleanup(func() { h.stop(); h.Close() }) // before the stack stops
	return h
}

func (h *hangingReceiver) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.release:
	default:
		close(h.release)
	}
}

func (h *hangingReceiver) counts() (holding, most int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.holding, h.most
}

// One workspace whose receiver hangs, with more events than the
// dispatcher has workers (64), holds no other workspace's deliveries
// back: it holds at most 48 workers, its jobs past those wait on their
// worker, and once another workspace's job waits they go back in the
// queue (no attempt spent), so the other's delivery comes within a
// second. Before, its jobs took every worker for an attempt time-out
// (10 s) while the other's waited behind them. Released, every event of
// the hung receiver comes, each first as its first attempt.
func TestAHungReceiverHoldsNoOtherWorkspaceBack(t *testing.T) {
	t.Parallel()
	s := startAdmin(t, localHooks, func(c *Config) { c.WebhookTimeUnit = 50 * time.Millisecond })
	hung := newHangingReceiver(t)
	createWebhook(t, s, `{"url":"`+hung.URL+`/hook","events":["call_started"]}`)
	quiet := createWorkspace(t, s, "quiet")
	var came collected[time.Time]
	prompt := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { came.add(time.Now()) }))
	t.Cleanup(prompt.Close)
	postForID(t, s, quiet.APIKey, "/v1/convai/webhooks", `{"url":"`+prompt.URL+`/hook","events":["call_started"]}`, 201, "webhook_id")

	const events = 100
	for i := range events {
		sendCallEvent(t, s, "call_started", "hung_"+strconv.Itoa(i))
	}
	eventually(t, 30*time.Second, "the hung receiver holding 48 deliveries", func() bool { holding, _ := hung.counts(); return holding >= 48 })
	sent := time.Now()
	postForID(t, s, quiet.APIKey, "/v1/convai/events", `{"event":"call_started","data":{"call_id":"prompt"}}`, 202, "event_id")
	at := came.await(t, 5*time.Second, "the other workspace's delivery", 1)[0]
	if _, most := hung.counts(); most > 48 {
		t.Fatalf("the hung receiver held %d deliveries at once; want at most 48 of the 64 workers", most)
	}
	t.Logf("the other workspace's delivery came %s after its event", at.Sub(sent))

	hung.stop()
	eventually(t, 60*time.Second, "every event of the hung receiver", func() bool {
		hung.mu.Lock()
		defer hung.mu.Unlock()
		return len(hung.firstAttemptsOf) == events
	})
	hung.mu.Lock()
	defer hung.mu.Unlock()
	for id, attempt := range hung.firstAttemptsOf {
		if attempt != "1" {
			t.Fatalf("event %s came first as attempt %s: waiting for its turn spent attempts", id, attempt)
		}
	}
}
