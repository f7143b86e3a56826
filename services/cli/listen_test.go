package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// noSleep makes the waits of persist instant for the test and records
// them.
func noSleep(t *testing.T) func() []time.Duration {
	var mu sync.Mutex
	var waits []time.Duration
	old := sleep
	sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		return ctx.Err()
	}
	t.Cleanup(func() { sleep = old })
	return func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Duration(nil), waits...)
	}
}

// hangUp drops the connection without an answer, as a platform going
// down does.
func hangUp(w http.ResponseWriter, _ *http.Request) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

// script answers each request to a route with the next handler, the last
// one from then on.
func script(hs ...http.HandlerFunc) http.HandlerFunc {
	var mu sync.Mutex
	n := 0
	return func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		h := hs[min(n, len(hs)-1)]
		n++
		mu.Unlock()
		h(w, r)
	}
}

func withRetryAfter(secs string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", secs)
		h(w, r)
	}
}

const rateLimited = `{"detail":{"status":"rate_limited","message":"Too many requests.","request_id":"r"}}`

// listen keeps polling through the rate limit (however long Retry-After
// is), a dropped connection and an outage, forwards the delivery, reports
// its outcome through a 429, and on Ctrl-C deletes its webhook through a
// 429.
func TestWebhooksListenRidesOutRateLimitsAndOutages(t *testing.T) {
	waits := noSleep(t)
	var got bytes.Buffer
	var gotMu sync.Mutex
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotMu.Lock()
		io.Copy(&got, r.Body)
		gotMu.Unlock()
	}))
	defer receiver.Close()

	f, base := newFake(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.on("POST /v1/convai/webhooks", reply(201, `{"webhook_id":"whk_1","events":["call_ended"],"active":true,"secret":"whsec_s"}`))
	f.on("POST /v1/voiceai/webhooks/whk_1/relay/next", script(
		withRetryAfter("36", reply(429, rateLimited)),
		hangUp,
		reply(502, `bad gateway`),
		reply(503, `{"detail":"restarting"}`),
		reply(200, `{"delivery":{"token":"tok_1","headers":{"X-Service-Event":"call_ended","X-Service-Event-Id":"evt_1"},"body":"{\"hello\":1}"}}`),
		func(w http.ResponseWriter, r *http.Request) {
			cancel() // Ctrl-C
			reply(200, `{"delivery":null}`)(w, r)
		}))
	f.on("POST /v1/voiceai/webhooks/whk_1/relay/result", script(
		withRetryAfter("36", reply(429, rateLimited)),
		reply(200, `{}`)))
	var deletes atomic.Int32
	f.on("DELETE /v1/convai/webhooks/whk_1", script(
		withRetryAfter("20", reply(429, rateLimited)),
		func(w http.ResponseWriter, r *http.Request) { deletes.Add(1); reply(204, ``)(w, r) }))

	var out, errOut bytes.Buffer
	code := Run(ctx, []string{"webhooks", "listen", "--event", "call_ended", "--forward-to", receiver.URL, "--api-key", "k", "--base-url", base}, &out, &errOut)
	stderr := errOut.String()
	if code != ExitOK || !strings.Contains(out.String(), "evt_1 -> 200") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), stderr)
	}
	gotMu.Lock()
	if got.String() != `{"hello":1}` {
		t.Fatalf("receiver got %q", got.String())
	}
	gotMu.Unlock()
	if n := strings.Count(stderr, "polling webhook whk_1 for deliveries: Too many requests. (HTTP 429, rate_limited, request id r); trying again"); n != 1 || strings.Contains(stderr, "HTTP 502") || strings.Contains(stderr, "HTTP 503") {
		t.Fatalf("the polling outage should be told once, was %d times: %q", n, stderr)
	}
	if !strings.Contains(stderr, "polling webhook whk_1 for deliveries: the platform answers again") {
		t.Fatalf("no word of the platform answering again: %q", stderr)
	}
	if strings.Contains(stderr, "could not") || deletes.Load() != 1 {
		t.Fatalf("%d deletes, stderr %q", deletes.Load(), stderr)
	}
	var long int
	for _, w := range waits() {
		if w >= 36*time.Second {
			long++
		}
	}
	if long != 2 {
		t.Fatalf("Retry-After 36 should be waited twice (poll, result): waits %v", waits())
	}
}

// When the webhook cannot be deleted in time, listen says which is left
// and how to delete it, and fails (exit 2): a script must clean up.
func TestWebhooksListenSaysWhichWebhookIsLeft(t *testing.T) {
	noSleep(t)
	f, base := newFake(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.on("POST /v1/convai/webhooks", reply(201, `{"webhook_id":"whk_1","events":["call_ended"],"active":true,"secret":"whsec_s"}`))
	f.on("POST /v1/voiceai/webhooks/whk_1/relay/next", func(w http.ResponseWriter, r *http.Request) {
		cancel()
		reply(200, `{"delivery":null}`)(w, r)
	})
	f.on("DELETE /v1/convai/webhooks/whk_1", withRetryAfter("3600", reply(429, rateLimited)))
	var out, errOut bytes.Buffer
	code := Run(ctx, []string{"webhooks", "listen", "--event", "call_ended", "--forward-to", "http://127.0.0.1:1/", "--api-key", "k", "--base-url", base}, &out, &errOut)
	if s := errOut.String(); code != ExitError || !strings.Contains(s, "could not delete relay webhook whk_1") || !strings.Contains(s, "voiceai webhooks delete whk_1") {
		t.Fatalf("exit %d, stderr %q", code, s)
	}
}
