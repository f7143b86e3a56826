package natsx

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/nats-io/nats.go"

	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

func TestForwardRoundTrip(t *testing.T) { onBothPaths(t, testForwardRoundTrip) }

func testForwardRoundTrip(t *testing.T, inProcess bool) {
	nc := freshConn(t)
	r := mux.NewRouter()
	r.HandleFunc("/v1/echo/{id}", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Echo-Id", mux.Vars(r)["id"])
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]string{
			"method": r.Method, "query": r.URL.Query().Get("q"), "body": string(b),
			"client": r.Header.Get("X-Client"), "remote": r.RemoteAddr,
		})
	})
	svc, err := Serve(nc, "echo", "1.0.0", r)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })

	f := &Forwarder{InProcess: inProcess, NC: nc, Timeout: 5 * time.Second}
	req := httptest.NewRequest(http.MethodPost, "/v1/echo/42?q=hello", strings.NewReader(`{"a":1}`))
	req.Header.Set("X-Client", "sdk")
	req.RemoteAddr = "192.0.2.1:5555"
	rec := httptest.NewRecorder()
	f.Forward(rec, req, "echo")

	if rec.Code != http.StatusCreated || rec.Header().Get("X-Echo-Id") != "42" {
		t.Fatalf("status/header not relayed: %d %v", rec.Code, rec.Header())
	}
	var got map[string]string
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"method": "POST", "query": "hello", "body": `{"a":1}`, "client": "sdk", "remote": "192.0.2.1:5555"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

func TestForwardNoRespondersIs503(t *testing.T) {
	nc := freshConn(t)
	f := &Forwarder{NC: nc, Timeout: 20 * time.Second}
	// Repeatable or not, nobody serving it is an answer, not a wait.
	for _, r := range []*http.Request{httptest.NewRequest("GET", "/v1/x", nil), Repeatable(httptest.NewRequest("GET", "/v1/x", nil))} {
		rec := httptest.NewRecorder()
		start := time.Now()
		f.Forward(rec, r, "absent")
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" || !strings.Contains(rec.Body.String(), `"status":"service_unavailable"`) {
			t.Fatalf("repeatable %v: got %d %s", repeatable(r), rec.Code, rec.Body)
		}
		if waited := time.Since(start); waited > 10*time.Second {
			t.Fatalf("repeatable %v: answered after %s", repeatable(r), waited)
		}
	}
}

func TestForwardDeadlineIs504(t *testing.T) { onBothPaths(t, testForwardDeadlineIs504) }

func testForwardDeadlineIs504(t *testing.T, inProcess bool) {
	nc := freshConn(t)
	release := make(chan struct{})
	svc, err := Serve(nc, "slow", "1.0.0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { close(release); _ = svc.Stop() })
	rec := httptest.NewRecorder()
	(&Forwarder{InProcess: inProcess, NC: nc, Timeout: 50 * time.Millisecond}).Forward(rec, httptest.NewRequest("GET", "/v1/x", nil), "slow")
	if rec.Code != http.StatusGatewayTimeout || !strings.Contains(rec.Body.String(), `"status":"upstream_timeout"`) {
		t.Fatalf("got %d %s", rec.Code, rec.Body)
	}
}

// A client that hangs up while its request waits for an answer is
// nobody's error: nothing is written and nothing logged above debug.
func TestForwardClientGoneIsNotAnError(t *testing.T) {
	onBothPaths(t, testForwardClientGoneIsNotAnError)
}

func testForwardClientGoneIsNotAnError(t *testing.T, inProcess bool) {
	nc := freshConn(t)
	release, arrived := make(chan struct{}), make(chan struct{})
	svc, err := Serve(nc, "slow", "1.0.0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { close(arrived); <-release }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { close(release); _ = svc.Stop() })
	var logs testkit.LogBuffer
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-arrived; cancel() }()
	rec := httptest.NewRecorder()
	handler := httpx.WithRequestID(slog.New(slog.NewTextHandler(&logs, nil)), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		(&Forwarder{InProcess: inProcess, NC: nc}).Forward(w, r, "slow")
	}))
	handler.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/x", nil).WithContext(ctx))
	if strings.Contains(logs.String(), "level=ERROR") || strings.Contains(logs.String(), "level=WARN") || rec.Body.Len() > 0 {
		t.Fatalf("a client gone: wrote %d %q, logged %s", rec.Code, rec.Body, logs.String())
	}
}

func TestForwardBodyLimitIs413(t *testing.T) { onBothPaths(t, testForwardBodyLimitIs413) }

func testForwardBodyLimitIs413(t *testing.T, inProcess bool) {
	nc := freshConn(t)
	rec := httptest.NewRecorder()
	(&Forwarder{InProcess: inProcess, NC: nc, MaxBody: 10}).Forward(rec, httptest.NewRequest("POST", "/v1/x", strings.NewReader(strings.Repeat("x", 11))), "any")
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("got %d %s", rec.Code, rec.Body)
	}
}

// A response far larger than one NATS message arrives whole, in order,
// streamed chunk by chunk; small requests keep being served meanwhile.
func TestForwardStreamsLargeResponses(t *testing.T) { onBothPaths(t, testForwardStreamsLargeResponses) }

func testForwardStreamsLargeResponses(t *testing.T, inProcess bool) {
	nc := freshConn(t)
	const size = 5<<20 + 12345 // several chunks and more than the 1 MiB max payload
	big := make([]byte, size)
	for i := range big {
		big[i] = byte('a' + i%26)
	}
	r := mux.NewRouter()
	r.HandleFunc("/big", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		for off := 0; off < len(big); off += 1000 {
			_, _ = w.Write(big[off:min(off+1000, len(big))])
		}
	})
	r.HandleFunc("/small", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	svc, err := Serve(nc, "big", "1.0.0", r)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	f := &Forwarder{InProcess: inProcess, NC: nc, Timeout: 5 * time.Second}

	rec := httptest.NewRecorder()
	f.Forward(rec, httptest.NewRequest(http.MethodGet, "/big", nil), "big")
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("status %d, headers %v", rec.Code, rec.Header())
	}
	if rec.Body.Len() != size || rec.Body.String() != string(big) {
		t.Fatalf("body of %d bytes differs from the %d sent", rec.Body.Len(), size)
	}
	small := httptest.NewRecorder()
	f.Forward(small, httptest.NewRequest(http.MethodGet, "/small", nil), "big")
	if small.Body.String() != "ok" || small.Header().Get(hdrStream) != "" {
		t.Fatalf("small response: %q %v", small.Body.String(), small.Header())
	}
}

// freshConn is a connection to an embedded NATS server of the test's
// own, both closed when the test ends.
func freshConn(t *testing.T) *nats.Conn {
	t.Helper()
	return testenv.ConnAt(t, testenv.StartNATS(t))
}

// lossyService answers every request on service's subject but the first,
// lost with the replica that held it, and counts the copies it was sent.
func lossyService(t *testing.T, nc *nats.Conn, service string) *atomic.Int64 {
	t.Helper()
	var seen atomic.Int64
	sub, err := nc.Subscribe(Subject(service), func(m *nats.Msg) {
		if seen.Add(1) == 1 {
			return // lost with its replica
		}
		reply := nats.NewMsg(m.Reply)
		reply.Header.Set(hdrStatus, "200")
		reply.Data = []byte(`{"ok":true}`)
		_ = m.RespondMsg(reply)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return &seen
}

// keyed is a POST with an Idempotency-Key.
func keyed(key string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/v1/x", strings.NewReader(`{}`))
	r.Header.Set("Idempotency-Key", key)
	return r
}

// A request marked Repeatable whose first attempt is lost (the replica
// holding it died) is sent again after HedgeAfter and answered; any other
// is sent once, whatever its method and headers.
func TestForwardHedgesOnlyRepeatableRequests(t *testing.T) {
	nc := freshConn(t)
	seen := lossyService(t, nc, "lossy")
	f := &Forwarder{NC: nc, Timeout: time.Second, HedgeAfter: 50 * time.Millisecond}

	for _, tc := range []struct {
		name   string
		req    *http.Request
		want   int
		served int64
	}{
		{"a GET marked repeatable", Repeatable(httptest.NewRequest(http.MethodGet, "/v1/x", nil)), http.StatusOK, 2},
		{"a POST with an Idempotency-Key, marked repeatable", Repeatable(keyed("k1")), http.StatusOK, 2},
		{"a POST with an Idempotency-Key, unmarked", keyed("k2"), http.StatusGatewayTimeout, 1},
		{"a POST without one", httptest.NewRequest(http.MethodPost, "/v1/x", strings.NewReader(`{}`)), http.StatusGatewayTimeout, 1},
		{"an unmarked GET", httptest.NewRequest(http.MethodGet, "/v1/x", nil), http.StatusGatewayTimeout, 1},
	} {
		seen.Store(0)
		rec := httptest.NewRecorder()
		f.Forward(rec, tc.req, "lossy")
		if rec.Code != tc.want || seen.Load() != tc.served {
			t.Errorf("%s: %d after %d attempts, want %d after %d", tc.name, rec.Code, seen.Load(), tc.want, tc.served)
		}
	}
}

// A write not marked Repeatable is sent once even when its answer is held
// past HedgeAfter and its connection reconnects meanwhile, even with an
// Idempotency-Key (the gateway marks only what the operation allows).
func TestForwardNeverRepeatsAnUnmarkedWrite(t *testing.T) {
	env := &testenv.Env{NATSURL: testenv.StartNATS(t)}
	service, gateway := env.Conn(t), env.Conn(t)
	seen := lossyService(t, service, "lossy")
	f := &Forwarder{NC: gateway, Timeout: 3 * time.Second, HedgeAfter: 20 * time.Millisecond}
	done := make(chan int, 1)
	go func() {
		rec := httptest.NewRecorder()
		f.Forward(rec, keyed("k"), "lossy")
		done <- rec.Code
	}()
	testkit.Eventually(t, 10*time.Second, "the first attempt", func() bool { return seen.Load() == 1 })
	reconnects := gateway.Stats().Reconnects
	if err := gateway.ForceReconnect(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the reconnection", func() bool { return gateway.Stats().Reconnects > reconnects && gateway.IsConnected() })
	// Lost with its connection, its outcome is unknown: an error, never a
	// second copy. Forward has returned, so nothing of it is left to send;
	// the round trips see what was sent delivered.
	code := <-done
	_ = gateway.Flush()
	_ = service.Flush()
	if code < 500 || seen.Load() != 1 {
		t.Fatalf("answered %d after %d attempts, want an error after 1", code, seen.Load())
	}
}

// A request marked Repeatable that was written to a connection which then
// reconnects (its node died with the request) is sent again on the new
// connection at once, not at its next hedge.
func TestForwardResendsOnReconnect(t *testing.T) {
	env := &testenv.Env{NATSURL: testenv.StartNATS(t)}
	service, gateway := env.Conn(t), env.Conn(t)
	seen := lossyService(t, service, "lossy")
	f := &Forwarder{NC: gateway, Timeout: 30 * time.Second, HedgeAfter: time.Minute} // no hedge by time here
	done := make(chan int, 1)
	go func() {
		rec := httptest.NewRecorder()
		f.Forward(rec, Repeatable(keyed("k")), "lossy")
		done <- rec.Code
	}()
	testkit.Eventually(t, 10*time.Second, "the first attempt", func() bool { return seen.Load() > 0 })
	if err := gateway.ForceReconnect(); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != http.StatusOK || seen.Load() != 2 {
			t.Fatalf("answered %d after %d attempts, want 200 after 2", code, seen.Load())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the request waited for its time-out: not sent again on reconnect")
	}
}

// A write not safe to repeat that was in flight when the connection broke
// or moved (its server died, or it left an island) is not sent again: it
// is answered 503 with Retry-After, its outcome unknown, at once rather
// than at its time-out.
func TestForwardLostWriteIs503(t *testing.T) {
	env := &testenv.Env{NATSURL: testenv.StartNATS(t)}
	service, gateway := env.Conn(t), env.Conn(t)
	var seen atomic.Int64
	sub, err := service.Subscribe(Subject("lossy"), func(*nats.Msg) { seen.Add(1) }) // never answers
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	_ = service.Flush()
	f := &Forwarder{NC: gateway, Timeout: time.Minute, HedgeAfter: time.Minute}
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		rec := httptest.NewRecorder()
		f.Forward(rec, httptest.NewRequest(http.MethodPost, "/v1/x", strings.NewReader(`{}`)), "lossy")
		done <- rec
	}()
	deadline := time.Now().Add(10 * time.Second)
	for seen.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the request never arrived")
		}
		time.Sleep(5 * time.Millisecond) // polling for the attempt
	}
	if err := gateway.ForceReconnect(); err != nil {
		t.Fatal(err)
	}
	select {
	case rec := <-done:
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" || seen.Load() != 1 {
			t.Fatalf("answered %d (Retry-After %q) after %d attempts, want 503 with Retry-After after 1: %s",
				rec.Code, rec.Header().Get("Retry-After"), seen.Load(), rec.Body)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the lost write waited for its time-out")
	}
}

// While the gateway's connection to NATS is down, a request waits a
// moment for it (BusWait), then is answered 503 with Retry-After naming
// the bus: not 504 at its deadline, as if a service were slow.
func TestForwardWithTheBusDownIs503(t *testing.T) {
	ns := testenv.StartNATSServer(t)
	gateway, err := nats.Connect(ns.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gateway.Close)
	svc, err := Serve(gateway, "agents", "1.0.0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	ns.Shutdown()
	testkit.Eventually(t, 10*time.Second, "the connection to notice the server is gone", func() bool { return !gateway.IsConnected() })
	f := &Forwarder{NC: gateway, Timeout: 10 * time.Second, BusWait: 20 * time.Millisecond}
	for _, r := range []*http.Request{httptest.NewRequest("GET", "/v1/x", nil), Repeatable(httptest.NewRequest("GET", "/v1/x", nil))} {
		rec := httptest.NewRecorder()
		f.Forward(rec, r, "agents")
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), "message bus") {
			t.Fatalf("repeatable %v: %d (Retry-After %q) %s; want 503 naming the bus", repeatable(r), rec.Code, rec.Header().Get("Retry-After"), rec.Body)
		}
	}
}

// A request its gateway stops waiting for as it begins to stop (a long
// poll: its context cancelled with ErrStopping) is answered 503 with
// Retry-After, to be sent again to another replica, not cut off as if its
// client had gone; the service hears it was given up.
func TestForwardGivenUpByAStoppingGatewayIs503(t *testing.T) {
	onBothPaths(t, testForwardGivenUpByAStoppingGatewayIs503)
}

func testForwardGivenUpByAStoppingGatewayIs503(t *testing.T, inProcess bool) {
	nc := freshConn(t)
	arrived, ended := make(chan struct{}), make(chan struct{})
	svc, err := Serve(nc, "polls", "1.0.0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done() // a poll waits until given up
		close(ended)
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() { <-arrived; cancel(ErrStopping) }()
	rec := httptest.NewRecorder()
	(&Forwarder{InProcess: inProcess, NC: nc, Timeout: time.Minute}).Forward(rec, httptest.NewRequest("POST", "/v1/poll", nil).WithContext(ctx), "polls")
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), "stopping") {
		t.Fatalf("got %d (Retry-After %q) %s, want 503 saying the gateway is stopping", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	select {
	case <-ended:
	case <-time.After(30 * time.Second):
		t.Fatal("the service was not told the poll was given up")
	}
}
