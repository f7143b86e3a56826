package natsx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/voiceai-platform/voiceai/pkg/principal"
)

// blocking serves name with a handler that holds each request until its
// context ends, and tells why it ended on ended.
func blocking(t *testing.T, nc *nats.Conn, name string) (started <-chan struct{}, ended <-chan error) {
	t.Helper()
	s, e := make(chan struct{}, MaxConcurrent+8), make(chan error, MaxConcurrent+8)
	svc, err := Serve(nc, name, "1.0.0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s <- struct{}{}
		<-r.Context().Done()
		e <- context.Cause(r.Context())
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	return s, e
}

// endsWithin waits for a handler to end and returns why.
func endsWithin(t *testing.T, ended <-chan error, d time.Duration) error {
	t.Helper()
	select {
	case err := <-ended:
		return err
	case <-time.After(d):
		t.Fatalf("the handler still runs after %s", d)
		return nil
	}
}

// A handler's context ends at the forwarder's deadline: a read that would
// otherwise never end frees its slot when its caller stops waiting.
func TestServedRequestsEndAtTheForwardersDeadline(t *testing.T) {
	onBothPaths(t, testServedRequestsEndAtTheForwardersDeadline)
}

func testServedRequestsEndAtTheForwardersDeadline(t *testing.T, inProcess bool) {
	nc := freshConn(t)
	started, ended := blocking(t, nc, "stuck")
	rec := httptest.NewRecorder()
	(&Forwarder{InProcess: inProcess, NC: nc, Timeout: 200 * time.Millisecond}).Forward(rec, httptest.NewRequest("GET", "/v1/x", nil), "stuck")
	<-started
	if rec.Code != http.StatusGatewayTimeout {
		t.Fatalf("got %d %s", rec.Code, rec.Body)
	}
	if err := endsWithin(t, ended, 10*time.Second); !errors.Is(err, errDeadline) && !errors.Is(err, errCallerGaveUp) {
		t.Fatalf("the handler ended with %v", err)
	}
}

// A client that hangs up ends the service's work at once, long before
// the deadline: the forwarder tells every replica.
func TestAClientGoneEndsTheServicesWork(t *testing.T) {
	onBothPaths(t, testAClientGoneEndsTheServicesWork)
}

func testAClientGoneEndsTheServicesWork(t *testing.T, inProcess bool) {
	nc := freshConn(t)
	started, ended := blocking(t, nc, "stuck")
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	(&Forwarder{InProcess: inProcess, NC: nc, Timeout: time.Hour}).Forward(httptest.NewRecorder(), httptest.NewRequest("GET", "/v1/x", nil).WithContext(ctx), "stuck")
	if err := endsWithin(t, ended, 10*time.Second); !errors.Is(err, errCallerGaveUp) {
		t.Fatalf("the handler ended with %v", err)
	}
}

// The hedges of a request this process is still serving are dropped: the
// first attempt answers, and a slow read is not served three times.
func TestHedgesOfARequestBeingServedAreDropped(t *testing.T) {
	nc := freshConn(t)
	var served atomic.Int64
	release := make(chan struct{})
	svc, err := Serve(nc, "slow", "1.0.0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		<-release
		_, _ = w.Write([]byte("done"))
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	copies, err := nc.SubscribeSync(Subject("slow")) // sees every attempt
	if err != nil {
		t.Fatal(err)
	}
	f := &Forwarder{NC: nc, Timeout: 20 * time.Second, HedgeAfter: 20 * time.Millisecond}
	answer := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		rec := httptest.NewRecorder()
		f.Forward(rec, Repeatable(httptest.NewRequest("GET", "/v1/x", nil)), "slow")
		answer <- rec
	}()
	for range 1 + maxHedges {
		if _, err := copies.NextMsg(10 * time.Second); err != nil {
			t.Fatalf("attempts sent: %v", err)
		}
	}
	_ = nc.Flush()
	close(release)
	rec := <-answer
	if rec.Code != 200 || rec.Body.String() != "done" || served.Load() != 1 {
		t.Fatalf("answered %d %q, served %d times", rec.Code, rec.Body, served.Load())
	}
}

// One workspace holds at most its share of a process's slots: past it, its
// requests are refused at once (429, Retry-After) while another
// workspace's are served.
func TestOneWorkspaceCannotTakeEverySlot(t *testing.T) {
	onBothPaths(t, testOneWorkspaceCannotTakeEverySlot)
}

func testOneWorkspaceCannotTakeEverySlot(t *testing.T, inProcess bool) {
	nc := freshConn(t)
	started, _ := blocking(t, nc, "shared")
	f := &Forwarder{InProcess: inProcess, NC: nc, Timeout: time.Minute}
	in := func(ws string, ctx context.Context) *http.Request {
		r := httptest.NewRequest("GET", "/v1/x", nil).WithContext(ctx)
		r.Header.Set(principal.HeaderWorkspace, ws)
		return r
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range MaxPerWorkspace {
		go f.Forward(httptest.NewRecorder(), in("ws_a", ctx), "shared")
	}
	for range MaxPerWorkspace {
		<-started
	}
	rec := httptest.NewRecorder()
	f.Forward(rec, in("ws_a", context.Background()), "shared")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" ||
		!strings.Contains(rec.Body.String(), `"status":"too_many_concurrent_requests"`) {
		t.Fatalf("workspace A past its share: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	// B's request is admitted (it reaches the handler) while A's wait.
	bctx, bcancel := context.WithCancel(context.Background())
	go func() { <-started; bcancel() }()
	f.Forward(httptest.NewRecorder(), in("ws_b", bctx), "shared")
	if context.Cause(bctx) != context.Canceled {
		t.Fatal("workspace B was not served")
	}
}

// A process with every slot taken refuses at once (503, Retry-After), and
// says it is not ready once that has lasted.
func TestAProcessWithNoFreeSlotRefusesAndIsNotReady(t *testing.T) {
	a := newAdmission(2, 2)
	now := time.Unix(1000, 0)
	a.slots.SetClock(func() time.Time { return now })
	noop := func(error) {}
	if a.admit("ws", "r1", noop) != admitted || a.admit("ws", "r1", noop) != duplicate || a.admit("ws", "r2", noop) != admitted {
		t.Fatal("the first two requests were not admitted, or a hedge was")
	}
	if v := a.admit("other", "r3", noop); v != full {
		t.Fatalf("a third request: %v, want full", v)
	}
	if a.Ready(context.Background()) != nil {
		t.Fatal("not ready at once")
	}
	now = now.Add(saturatedFor)
	if a.Ready(context.Background()) == nil {
		t.Fatal("still ready with every slot taken for the whole wait")
	}
	a.release("ws", "r1")
	if a.Ready(context.Background()) != nil || a.admit("other", "r3", noop) != admitted {
		t.Fatal("a freed slot is not taken, or the process stays not ready")
	}

	nc := freshConn(t)
	m := nats.NewMsg(Subject("full"))
	m.Header.Set(hdrMethod, "GET")
	m.Header.Set(hdrURI, "/v1/x")
	svc, err := Serve(nc, "full", "1.0.0", http.NotFoundHandler())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	for range MaxConcurrent { // every slot taken
		if err := svc.admission.slots.TryAcquire(fmt.Sprint(rand.Int())); err != nil {
			t.Fatal(err)
		}
	}
	reply, err := nc.RequestMsg(m, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if reply.Header.Get(hdrStatus) != "503" || reply.Header.Get("Retry-After") == "" || !strings.Contains(string(reply.Data), "service_at_capacity") {
		t.Fatalf("a full process answered %v %s", reply.Header, reply.Data)
	}
}

// A streamed answer whose client stops reading ends the handler's work at
// once: the gateway tells the service, which no longer waits its idle time.
func TestAStreamNobodyReadsEndsTheHandler(t *testing.T) {
	onBothPaths(t, testAStreamNobodyReadsEndsTheHandler)
}

func testAStreamNobodyReadsEndsTheHandler(t *testing.T, inProcess bool) {
	nc := freshConn(t)
	ended := make(chan error, 1)
	svc, err := Serve(nc, "endless", "1.0.0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("x", 64<<10))
		for {
			if _, err := w.Write(chunk); err != nil {
				ended <- context.Cause(r.Context())
				return
			}
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	f := &Forwarder{InProcess: inProcess, NC: nc, Timeout: time.Minute}
	gateway := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { f.Forward(w, r, "endless") }))
	t.Cleanup(gateway.Close)
	resp, err := http.Get(gateway.URL + "/v1/x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close() // the client hangs up mid-answer
	// In process, the caller's side may see the hang-up before a write
	// fails: it ends the handler as the caller gone.
	if err := endsWithin(t, ended, StreamIdle/2); !errors.Is(err, errStreamAbandoned) && !(inProcess && errors.Is(err, errCallerGaveUp)) {
		t.Fatalf("the handler ended with %v", err)
	}
}

// A forwarder's cancel can overtake its request (they travel on two
// subscriptions, and the request may wait behind others): the request
// arriving after it is dropped, not served for nobody.
func TestARequestCancelledBeforeItArrivesIsNotServed(t *testing.T) {
	nc := freshConn(t)
	served := make(chan string, 4)
	svc, err := Serve(nc, "late", "1.0.0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served <- r.URL.Path
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	if err := nc.Publish(CancelSubject("late"), []byte("fwd_gone")); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	request := func(id, path string) {
		m := nats.NewMsg(Subject("late"))
		m.Header.Set(hdrMethod, "GET")
		m.Header.Set(hdrURI, path)
		m.Header.Set(hdrRequest, id)
		m.Reply = nc.NewInbox()
		if err := nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	// The service takes its requests in order: once the second is served,
	// the first was decided on.
	request("fwd_gone", "/v1/cancelled")
	request("fwd_next", "/v1/next")
	if got := <-served; got != "/v1/next" {
		t.Fatalf("served %s; the request cancelled before it arrived must not be", got)
	}
	a := newAdmission(4, 4)
	a.cancel("fwd_x")
	if v := a.admit("ws", "fwd_x", func(error) {}); v != abandoned {
		t.Fatalf("a request cancelled before it arrived: verdict %d; want abandoned", v)
	}
	if v := a.admit("ws", "fwd_x", func(error) {}); v != admitted {
		t.Fatalf("its next attempt: verdict %d; want admitted (the cancel is used once)", v)
	}
}

// What is remembered of requests cancelled before they arrived stays
// bounded, whatever the rate of cancels.
func TestCancelsOfRequestsNotHereStayBounded(t *testing.T) {
	a := newAdmission(4, 4)
	for i := range 3 * gaveUpKept {
		a.cancel(fmt.Sprintf("fwd_%d", i))
	}
	if n := len(a.gaveUp); n > gaveUpKept {
		t.Fatalf("%d cancels remembered; want at most %d", n, gaveUpKept)
	}
	if v := a.admit("ws", fmt.Sprintf("fwd_%d", 3*gaveUpKept-1), func(error) {}); v != abandoned {
		t.Fatalf("the newest cancel forgotten: verdict %d", v)
	}
}
