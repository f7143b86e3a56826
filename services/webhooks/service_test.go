package webhooks

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.mongodb.org/mongo-driver/v2/mongo"

	events "github.com/voiceai-platform/voiceai/proto-events"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/pkg/runtime"
	"github.com/voiceai-platform/voiceai/pkg/runtime/runtimetest"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/webhooks/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/delivery"
	"github.com/voiceai-platform/voiceai/services/webhooks/dispatcher"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

const timeUnit = 20 * time.Millisecond // one retry_config second in these tests

type harness struct {
	t   *testing.T
	env *testenv.Env
	svc *Service
	js  jetstream.JetStream
	cfg Config
	ctx context.Context
}

// testConfig times attempts out after 1 s: long enough that a local
// receiver is not timed out by chance on a starved machine (a timed-out
// attempt the receiver saw is delivered again), short for the time-out
// test, and below the 2 s AckWait, as a deployment must be.
func testConfig() Config {
	return Config{
		Secret: "deployment-secret", AllowHosts: []string{"127.0.0.1"}, AttemptTimeout: time.Second,
		Dispatcher: dispatcher.Options{TimeUnit: timeUnit, AckWait: 2 * time.Second, Workers: 16, NoTickets: true},
	}
}

// deps are one replica's dependencies, on a connection of its own.
func deps(t *testing.T, env *testenv.Env, withMongo bool) (runtime.Deps, *nats.Conn) {
	nc := env.Conn(t)
	var mc *mongo.Client
	if withMongo {
		mc = env.Mongo(t)
	}
	return runtimetest.Deps(t, nc, mc), nc
}

// newHarness starts the API and one dispatcher on embedded NATS and
// FerretDB.
func newHarness(t *testing.T, withDispatcher bool) *harness {
	env := testenv.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	d, _ := deps(t, env, true)
	cfg := testConfig()
	svc, err := Start(ctx, d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	if withDispatcher {
		ds, err := StartDispatcher(ctx, d, cfg, SharedRegistry(svc))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(ds.Stop)
	}
	return &harness{t: t, env: env, svc: svc, js: d.JS, cfg: cfg, ctx: ctx}
}

func (h *harness) do(ws, method, path, body string, perms ...string) (int, map[string]any) {
	h.t.Helper()
	if len(perms) == 0 {
		perms = []string{"all"}
	}
	return runtimetest.Serve(h.svc.Handler, principal.Principal{WorkspaceID: ws, UserID: "sa_1", Permissions: perms}, method, path, body)
}

func (h *harness) create(ws, body string) (id, secret string) {
	h.t.Helper()
	code, m := h.do(ws, "POST", "/v1/convai/webhooks", body)
	if code != http.StatusCreated {
		h.t.Fatalf("create: %d %v", code, m)
	}
	return m["webhook_id"].(string), m["secret"].(string)
}

func (h *harness) ingest(ws, body string) string {
	h.t.Helper()
	code, m := h.do(ws, "POST", "/v1/convai/events", body)
	if code != http.StatusAccepted {
		h.t.Fatalf("ingest: %d %v", code, m)
	}
	return m["event_id"].(string)
}

// received is one request a receiver saw, with its signature checked by
// the receiver itself (raw body, HMAC-SHA256, constant-time compare).
type received struct {
	body     []byte
	eventID  string
	sigValid bool
	attempt  string
}

type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []received
	secret []byte
	reply  func(n int, w http.ResponseWriter) // n counts requests from 1
}

func newReceiver(t *testing.T, reply func(n int, w http.ResponseWriter)) *receiver {
	rc := &receiver{reply: reply}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, received{
			body: body, eventID: r.Header.Get("X-Service-Event-Id"), attempt: r.Header.Get("X-Service-Delivery-Attempt"),
			sigValid: testkit.SignedBy(rc.secret, body, r.Header.Get("X-Service-Signature")) &&
				sdkSigned(rc.secret, body, r.Header.Get("ElevenLabs-Signature"), r.Header.Get("X-Service-Timestamp")),
		})
		n := len(rc.got)
		rc.mu.Unlock()
		if reply != nil {
			reply(n, w)
		}
	}))
	t.Cleanup(rc.Close)
	return rc
}

// sdkSigned reports whether header, an ElevenLabs-Signature, signs body
// at the attempt's time ts (X-Service-Timestamp), within a minute of now:
// "t=<ts>,v0=" and the hex HMAC-SHA256 of "<ts>.<body>".
func sdkSigned(secret, body []byte, header, ts string) bool {
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Since(time.Unix(t, 0)).Abs() > time.Minute {
		return false
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts + "."))
	m.Write(body)
	return hmac.Equal([]byte(header), []byte("t="+ts+",v0="+hex.EncodeToString(m.Sum(nil))))
}

func (rc *receiver) setSecret(s string) {
	rc.mu.Lock()
	rc.secret = []byte(s)
	rc.mu.Unlock()
}

func (rc *receiver) all() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// settled waits until the webhook's deliveries have all reached a
// terminal state, after which nothing more can reach its receiver:
//   - every event stored on PLATFORM so far has been fanned out (the
//     fan-out consumer's ack floor is at the stream's last sequence, and
//     a fan-out is acknowledged only once its jobs are stored);
//   - the WEBHOOK_DELIVERIES work queue holds no job of the webhook (each
//     was acknowledged or terminated, so JetStream never hands it out
//     again; a scheduled retry would still be there);
//   - every event in the webhook's log has its final attempt recorded
//     (attempts are recorded before the job is settled).
func (h *harness) settled(t *testing.T, ws, id string) {
	t.Helper()
	js := h.js
	platform, err := js.Stream(h.ctx, events.PlatformStream)
	if err != nil {
		t.Fatal(err)
	}
	last := platform.CachedInfo().State.LastSeq
	fanout, err := js.Consumer(h.ctx, events.PlatformStream, dispatcher.FanoutPlatformDurable)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 15*time.Second, fmt.Sprintf("PLATFORM fanned out up to %d", last), func() bool {
		info, err := fanout.Info(h.ctx)
		return err == nil && info.AckFloor.Stream >= last
	})
	// onSubject counts the messages stream holds on subject (ok false
	// when the stream cannot say).
	onSubject := func(stream string, subject func(ws, id string) (string, error)) func() (n int, ok bool) {
		str, err := js.Stream(h.ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		subj, err := subject(ws, id)
		if err != nil {
			t.Fatal(err)
		}
		return func() (int, bool) {
			info, err := str.Info(h.ctx, jetstream.WithSubjectFilter(subj))
			if err != nil {
				return 0, false
			}
			return int(info.State.Subjects[subj]), true
		}
	}
	jobs := onSubject(events.WebhookDeliveriesStream, events.WebhookDeliverySubject)
	testkit.Eventually(t, 15*time.Second, "every job of "+id+" settled", func() bool {
		n, ok := jobs()
		return ok && n == 0
	})
	// Every attempt record stored (the fan-out stores a not-sent one
	// before it acknowledges its event) has reached the API's log.
	records := onSubject(events.WebhookAttemptsStream, events.WebhookAttemptSubject)
	testkit.Eventually(t, 15*time.Second, "every attempt record of "+id+" in the API's log", func() bool {
		n, ok := records()
		return ok && len(recent(h.svc.App.Attempts, id, memory.RecentAttempts)) >= min(n, memory.RecentAttempts)
	})
	testkit.Eventually(t, 15*time.Second, "the final attempt of every event of "+id+" recorded", func() bool {
		final := map[string]bool{}
		for _, a := range recent(h.svc.App.Attempts, id, memory.RecentAttempts) {
			if !a.GetTest() {
				final[a.GetEventId()] = final[a.GetEventId()] || a.GetFinal()
			}
		}
		for _, ok := range final {
			if !ok {
				return false
			}
		}
		return true
	})
}

func (h *harness) logs(ws, id string) []map[string]any {
	code, m := h.do(ws, "GET", "/v1/voiceai/webhooks/"+id+"/logs?limit=100", "")
	if code != 200 {
		h.t.Fatalf("logs: %d %v", code, m)
	}
	var out []map[string]any
	for _, e := range m["recent_deliveries"].([]any) {
		out = append(out, e.(map[string]any))
	}
	return out
}

func (h *harness) health(ws, id string) map[string]any {
	code, m := h.do(ws, "GET", "/v1/voiceai/webhooks/health", "")
	if code != 200 {
		h.t.Fatalf("health: %d %v", code, m)
	}
	for _, e := range m["webhooks"].([]any) {
		if e.(map[string]any)["webhook_id"] == id {
			return e.(map[string]any)
		}
	}
	h.t.Fatalf("webhook %s not in health %v", id, m)
	return nil
}

func hookBody(url, events, retry string) string {
	if retry == "" {
		return fmt.Sprintf(`{"url":%q,"events":%s}`, url, events)
	}
	return fmt.Sprintf(`{"url":%q,"events":%s,"retry_config":%s}`, url, events, retry)
}

func TestManagementAPI(t *testing.T) {
	h := newHarness(t, false)
	// 422 for every invalid create field, naming it.
	for body, loc := range map[string]string{
		`{"events":["call_started"]}`:                                                                      `["body","url"]`,
		`{"url":"http://example.com","events":["call_started"]}`:                                           `["body","url"]`,
		`{"url":"https://example.com","events":[]}`:                                                        `["body","events"]`,
		`{"url":"https://example.com","events":["call_started","bogus"]}`:                                  `["body","events",1]`,
		`{"url":"https://example.com","events":"call_started"}`:                                            `["body","events"]`,
		`{"url":"https://example.com","events":["call_started"],"secret":"short"}`:                         `["body","secret"]`,
		`{"url":"https://example.com","events":["call_started"],"active":"yes"}`:                           `["body","active"]`,
		`{"url":"https://example.com","events":["call_started"],"retry_config":{"max_retries":99}}`:        `["body","retry_config","max_retries"]`,
		`{"url":"https://example.com","events":["call_started"],"retry_config":{"retry_delay":0}}`:         `["body","retry_config","retry_delay"]`,
		`{"url":"https://example.com","events":["call_started"],"retry_config":{"max_delay":999999}}`:      `["body","retry_config","max_delay"]`,
		`{"url":"https://example.com","events":["call_started"],"retry_config":{"retry_on_status":[99]}}`:  `["body","retry_config","retry_on_status",0]`,
		`{"url":"https://example.com","events":["call_started"],"retry_config":{"exponential_backoff":1}}`: `["body","retry_config","exponential_backoff"]`,
	} {
		code, m := h.do("ws_a", "POST", "/v1/convai/webhooks", body)
		b, _ := json.Marshal(m["detail"])
		if code != 422 || !strings.Contains(string(b), `"loc":`+loc) {
			t.Errorf("%s: %d %s, want 422 at %s", body, code, b, loc)
		}
	}
	if code, _ := h.do("ws_a", "POST", "/v1/convai/webhooks", `{"url":`); code != 400 {
		t.Errorf("malformed JSON: %d", code)
	}
	// Permissions are checked in the service too.
	if code, _ := h.do("ws_a", "POST", "/v1/convai/webhooks", hookBody("https://example.com", `["call_started"]`, ""), "convai_read"); code != 403 {
		t.Errorf("create with convai_read: %d", code)
	}

	id, secret := h.create("ws_a", hookBody("https://example.com/hook", `["call_started","ticket_created"]`, ""))
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("generated secret %q", secret)
	}
	code, m := h.do("ws_a", "GET", "/v1/convai/webhooks", "", "convai_read")
	list := m["data"].([]any)
	if hint := secret[:len("whsec_")+4] + "…"; code != 200 || len(list) != 1 || list[0].(map[string]any)["webhook_id"] != id ||
		list[0].(map[string]any)["secret"] != nil || list[0].(map[string]any)["secret_hint"] != hint {
		t.Fatalf("list: %d %v", code, m)
	}
	rc := list[0].(map[string]any)["retry_config"].(map[string]any)
	if rc["max_retries"] != float64(domain.DefaultMaxRetries) || rc["retry_delay"] != float64(domain.DefaultRetryDelay) || rc["max_delay"] != float64(domain.DefaultMaxDelay) {
		t.Fatalf("defaults: %v", rc)
	}
	// The secret is stored sealed: the event carries no plaintext.
	w, _ := h.svc.App.Registry.Get("ws_a", id)
	if strings.Contains(string(w.GetSecretSealed()), secret) || len(w.GetSecretSealed()) < len(secret) {
		t.Fatal("secret not sealed")
	}
	// Another workspace sees nothing.
	for _, req := range [][2]string{{"GET", "/v1/convai/webhooks/" + id}, {"PUT", "/v1/convai/webhooks/" + id}, {"DELETE", "/v1/convai/webhooks/" + id},
		{"GET", "/v1/voiceai/webhooks/" + id + "/logs"}, {"POST", "/v1/voiceai/webhooks/" + id + "/test"}} {
		if code, m := h.do("ws_b", req[0], req[1], `{"active":false,"event_type":"call_started"}`); code != 404 {
			t.Errorf("%s %s from another workspace: %d %v", req[0], req[1], code, m)
		}
	}
	if _, m := h.do("ws_b", "GET", "/v1/convai/webhooks", ""); len(m["data"].([]any)) != 0 {
		t.Fatal("another workspace lists the webhook")
	}
	// Update: events, active, retry_config, secret rotation.
	code, m = h.do("ws_a", "PUT", "/v1/convai/webhooks/"+id, `{"events":["call_ended"],"active":false,"retry_config":{"max_retries":2},"secret":"rotated-secret-0123456789"}`)
	if code != 200 || m["active"] != false || m["events"].([]any)[0] != "call_ended" || m["retry_config"].(map[string]any)["max_retries"] != float64(2) ||
		m["retry_config"].(map[string]any)["retry_delay"] != float64(domain.DefaultRetryDelay) || m["secret"] != nil || m["secret_hint"] != "rota…" {
		t.Fatalf("update: %d %v", code, m)
	}
	if code, m := h.do("ws_a", "PUT", "/v1/convai/webhooks/"+id, `{"events":["nope"]}`); code != 422 {
		t.Fatalf("update with an unknown event: %d %v", code, m)
	}
	if code, _ := h.do("ws_a", "DELETE", "/v1/convai/webhooks/"+id, ""); code != 204 {
		t.Fatalf("delete: %d", code)
	}
	if code, _ := h.do("ws_a", "GET", "/v1/convai/webhooks/"+id, ""); code != 404 {
		t.Fatalf("get after delete: %d", code)
	}
	// Ingestion: validation, and a retried request (same Idempotency-Key)
	// is one event.
	if code, m := h.do("ws_a", "POST", "/v1/convai/events", `{"event":"call_ended","data":{"duration_seconds":"long"}}`); code != 422 ||
		!strings.Contains(fmt.Sprint(m["detail"]), "duration_seconds") {
		t.Fatalf("ingest type error: %d %v", code, m)
	}
	ingest := func() string {
		req := httptest.NewRequest("POST", "/v1/convai/events", strings.NewReader(`{"event":"call_started","data":{"call_id":"c1"}}`))
		principal.Principal{WorkspaceID: "ws_a", UserID: "sa_1", Permissions: []string{"convai_write"}}.SetHeaders(req.Header)
		req.Header.Set("Idempotency-Key", "k1")
		rec := httptest.NewRecorder()
		h.svc.Handler.ServeHTTP(rec, req)
		var m map[string]string
		_ = json.Unmarshal(rec.Body.Bytes(), &m)
		if rec.Code != 202 {
			t.Fatalf("ingest: %d %s", rec.Code, rec.Body)
		}
		return m["event_id"]
	}
	if a, b := ingest(), ingest(); a != b || a == "" {
		t.Fatalf("retried ingestion ids %q %q", a, b)
	}
	str, _ := h.js.Stream(h.ctx, "PLATFORM")
	if n := str.CachedInfo().State.Msgs; n != 1 {
		t.Fatalf("PLATFORM holds %d events after a retried ingestion", n)
	}
}

func TestDeliveries(t *testing.T) {
	h := newHarness(t, true)

	t.Run("signed, logged, healthy", func(t *testing.T) {
		rc := newReceiver(t, nil)
		id, secret := h.create("ws_sig", hookBody(rc.URL+"/hook", `["call_started","call_ended"]`, ""))
		rc.setSecret(secret)
		ev := h.ingest("ws_sig", `{"event":"call_started","timestamp":"2026-01-02T03:04:05Z","data":{"call_id":"c1","metadata":{"call_queue":"q"}}}`)
		h.ingest("ws_sig", `{"event":"agent_busy","data":{}}`) // not subscribed
		testkit.Eventually(t, 15*time.Second, "delivery", func() bool { return len(rc.all()) >= 1 })
		got := rc.all()[0]
		if !got.sigValid || got.eventID != ev {
			t.Fatalf("delivery %+v (event %s)", got, ev)
		}
		var env map[string]any
		_ = json.Unmarshal(got.body, &env)
		if env["event"] != "call_started" || env["timestamp"] != "2026-01-02T03:04:05.000Z" || env["data"].(map[string]any)["call_id"] != "c1" {
			t.Fatalf("envelope %s", got.body)
		}
		testkit.Eventually(t, 15*time.Second, "log entry", func() bool { return len(h.logs("ws_sig", id)) == 1 })
		e := h.logs("ws_sig", id)[0]
		if e["status"] != "success" || e["event"] != "call_started" || e["response_code"] != float64(200) || e["delivery_time_ms"] == nil || e["error"] != nil || e["retry_count"] != nil {
			t.Fatalf("log entry %v", e)
		}
		hh := h.health("ws_sig", id)
		if hh["status"] != "healthy" || hh["success_rate"] != float64(1) || hh["consecutive_failures"] != float64(0) || hh["last_success_at"] == nil || hh["backlog"] != float64(0) {
			t.Fatalf("health %v", hh)
		}
		// The test endpoint makes a real signed delivery and reports it.
		code, m := h.do("ws_sig", "POST", "/v1/voiceai/webhooks/"+id+"/test", `{"event_type":"call_ended"}`)
		if code != 200 || m["status"] != "success" || m["response_code"] != float64(200) {
			t.Fatalf("test: %d %v", code, m)
		}
		last := rc.all()[len(rc.all())-1]
		if !last.sigValid || !strings.Contains(string(last.body), `"duration_seconds":125`) {
			t.Fatalf("test delivery %+v", last)
		}
		if code, _ := h.do("ws_sig", "POST", "/v1/voiceai/webhooks/"+id+"/test", `{"event_type":"nope"}`); code != 422 {
			t.Fatalf("test with an unknown event: %d", code)
		}
	})

	t.Run("status in retry_on_status is retried until max_retries", func(t *testing.T) {
		rc := newReceiver(t, func(n int, w http.ResponseWriter) { w.WriteHeader(503) })
		id, secret := h.create("ws_r1", hookBody(rc.URL, `["call_ended"]`, `{"max_retries":2,"retry_delay":1,"exponential_backoff":true,"max_delay":4,"retry_on_status":[503]}`))
		rc.setSecret(secret)
		ev := h.ingest("ws_r1", `{"event":"call_ended","data":{"call_id":"c"}}`)
		testkit.Eventually(t, 15*time.Second, "3 attempts", func() bool { return len(h.logs("ws_r1", id)) == 3 })
		for i, r := range rc.all() {
			if r.eventID != ev || !r.sigValid || r.attempt != fmt.Sprint(i+1) {
				t.Fatalf("attempt %d: %+v", i, r)
			}
		}
		logs := h.logs("ws_r1", id)
		for i, e := range logs { // newest first
			if e["status"] != "failed" || e["response_code"] != float64(503) || e["retry_count"] != float64(2-i) || e["error"] != "HTTP 503" {
				t.Fatalf("log %d: %v", i, e)
			}
		}
		hh := h.health("ws_r1", id)
		if hh["status"] != "degraded" || hh["success_rate"] != float64(0) || hh["consecutive_failures"] != float64(3) || hh["last_failure_at"] == nil {
			t.Fatalf("health %v", hh)
		}
		// No fourth attempt: the job has ended (the third attempt is final)
		// and left the work queue, so nothing can be delivered any more.
		h.settled(t, "ws_r1", id)
		if n, l := len(rc.all()), len(h.logs("ws_r1", id)); n != 3 || l != 3 {
			t.Fatalf("%d attempts received, %d logged, want 3", n, l)
		}
		if !recent(h.svc.App.Attempts, id, 1)[0].GetFinal() {
			t.Fatal("the third attempt is not final")
		}
	})

	t.Run("status not in retry_on_status is not retried", func(t *testing.T) {
		rc := newReceiver(t, func(n int, w http.ResponseWriter) { w.WriteHeader(500) })
		id, secret := h.create("ws_r2", hookBody(rc.URL, `["call_ended"]`, `{"max_retries":3,"retry_delay":1,"retry_on_status":[503]}`))
		rc.setSecret(secret)
		h.ingest("ws_r2", `{"event":"call_ended","data":{}}`)
		testkit.Eventually(t, 15*time.Second, "1 attempt", func() bool { return len(h.logs("ws_r2", id)) == 1 })
		h.settled(t, "ws_r2", id)
		if n, l := len(rc.all()), len(h.logs("ws_r2", id)); n != 1 || l != 1 {
			t.Fatalf("%d attempts received, %d logged, want 1", n, l)
		}
		if a := recent(h.svc.App.Attempts, id, 1)[0]; !a.GetFinal() || a.GetRetryCount() != 0 {
			t.Fatalf("attempt %v, want a final first attempt", a)
		}
	})

	t.Run("time-outs are retried, then succeed", func(t *testing.T) {
		hang := make(chan struct{})
		rc := newReceiver(t, func(n int, w http.ResponseWriter) {
			if n == 1 {
				<-hang // no answer within the 1 s attempt limit
			}
		})
		t.Cleanup(func() { close(hang) }) // before the receiver closes (cleanups run last first)
		id, secret := h.create("ws_r3", hookBody(rc.URL, `["call_ended"]`, `{"max_retries":2,"retry_delay":1,"retry_on_status":[]}`))
		rc.setSecret(secret)
		h.ingest("ws_r3", `{"event":"call_ended","data":{}}`)
		testkit.Eventually(t, 15*time.Second, "success after a time-out", func() bool {
			l := h.logs("ws_r3", id)
			return len(l) == 2 && l[0]["status"] == "success"
		})
		if e := h.logs("ws_r3", id)[1]; e["response_code"] != float64(0) || !strings.Contains(e["error"].(string), "timed out") {
			t.Fatalf("time-out entry %v", e)
		}
		h.settled(t, "ws_r3", id)
		if n, l := len(rc.all()), len(h.logs("ws_r3", id)); n != 2 || l != 2 {
			t.Fatalf("%d attempts received, %d logged, want 2", n, l)
		}
	})

	t.Run("Retry-After is honoured", func(t *testing.T) {
		var mu sync.Mutex
		var times []time.Time
		rc := newReceiver(t, func(n int, w http.ResponseWriter) {
			mu.Lock()
			times = append(times, time.Now())
			mu.Unlock()
			if n == 1 {
				w.Header().Set("Retry-After", "20") // 20 units = 400ms, far above retry_delay
				w.WriteHeader(429)
			}
		})
		id, secret := h.create("ws_r4", hookBody(rc.URL, `["call_ended"]`, `{"max_retries":1,"retry_delay":1,"exponential_backoff":false,"max_delay":30,"retry_on_status":[429]}`))
		rc.setSecret(secret)
		h.ingest("ws_r4", `{"event":"call_ended","data":{}}`)
		testkit.Eventually(t, 15*time.Second, "retry", func() bool { return len(h.logs("ws_r4", id)) == 2 })
		mu.Lock()
		gap := times[1].Sub(times[0])
		mu.Unlock()
		if gap < 20*timeUnit {
			t.Fatalf("retried after %s, before Retry-After (%s)", gap, 20*timeUnit)
		}
	})

	t.Run("410 Gone disables the webhook", func(t *testing.T) {
		rc := newReceiver(t, func(n int, w http.ResponseWriter) { w.WriteHeader(410) })
		id, secret := h.create("ws_r5", hookBody(rc.URL, `["call_ended"]`, `{"max_retries":5,"retry_delay":1,"retry_on_status":[410,503]}`))
		rc.setSecret(secret)
		h.ingest("ws_r5", `{"event":"call_ended","data":{}}`)
		testkit.Eventually(t, 15*time.Second, "disabled", func() bool {
			_, m := h.do("ws_r5", "GET", "/v1/convai/webhooks/"+id, "")
			return m["active"] == false && m["disabled_reason"] == "gone"
		})
		h.ingest("ws_r5", `{"event":"call_ended","data":{}}`)
		if hh := h.health("ws_r5", id); hh["status"] != "disabled" || hh["disabled"] != true {
			t.Fatalf("health %v", hh)
		}
		// The first job ended at the 410 and the second event, stored after
		// the webhook was disabled, has been fanned out without a job left:
		// it is only logged, as not sent, for recover to replay.
		h.settled(t, "ws_r5", id)
		if n, l := len(rc.all()), len(h.logs("ws_r5", id)); n != 1 || l != 2 {
			t.Fatalf("%d attempts received, %d logged after 410, want 1 received and 2 logged", n, l)
		}
		// Re-activating clears the reason.
		if _, m := h.do("ws_r5", "PUT", "/v1/convai/webhooks/"+id, `{"active":true}`); m["active"] != true || m["disabled_reason"] != nil {
			t.Fatalf("re-activate: %v", m)
		}
	})

	t.Run("redirects are not followed", func(t *testing.T) {
		target := newReceiver(t, nil)
		rc := newReceiver(t, func(n int, w http.ResponseWriter) {
			w.Header().Set("Location", target.URL)
			w.WriteHeader(307)
		})
		id, secret := h.create("ws_r6", hookBody(rc.URL, `["call_ended"]`, `{"max_retries":2,"retry_delay":1}`))
		rc.setSecret(secret)
		h.ingest("ws_r6", `{"event":"call_ended","data":{}}`)
		testkit.Eventually(t, 15*time.Second, "attempt", func() bool { return len(h.logs("ws_r6", id)) == 1 })
		e := h.logs("ws_r6", id)[0]
		if e["response_code"] != float64(307) || !strings.Contains(e["error"].(string), "redirect") {
			t.Fatalf("log %v", e)
		}
		h.settled(t, "ws_r6", id)
		if len(rc.all()) != 1 || len(target.all()) != 0 || len(h.logs("ws_r6", id)) != 1 {
			t.Fatalf("redirect followed or retried: %d, %d", len(rc.all()), len(target.all()))
		}
	})

	t.Run("a name resolving to loopback is refused at connect time", func(t *testing.T) {
		rc := newReceiver(t, nil)
		port := rc.URL[strings.LastIndexByte(rc.URL, ':')+1:]
		id, _ := h.create("ws_ssrf", hookBody("https://localhost:"+port+"/h", `["call_ended"]`, `{"max_retries":3,"retry_delay":1}`))
		code, m := h.do("ws_ssrf", "POST", "/v1/voiceai/webhooks/"+id+"/test", `{"event_type":"call_ended"}`)
		if code != 200 || m["status"] != "failed" || !strings.Contains(fmt.Sprint(m["error"]), "loopback") {
			t.Fatalf("test: %d %v", code, m)
		}
		h.ingest("ws_ssrf", `{"event":"call_ended","data":{}}`)
		testkit.Eventually(t, 15*time.Second, "refusal logged", func() bool { return len(h.logs("ws_ssrf", id)) == 2 })
		h.settled(t, "ws_ssrf", id)
		if len(rc.all()) != 0 || len(h.logs("ws_ssrf", id)) != 2 {
			t.Fatal("refused destination reached or retried")
		}
	})
}

// A dispatcher replica killed mid-delivery loses nothing: its unacked
// jobs go to another replica after AckWait, and every event arrives with
// the same event id however often it is delivered.
func TestDispatcherKilledMidDeliveryLosesNothing(t *testing.T) {
	h := newHarness(t, false)
	release := make(chan struct{})
	rc := newReceiver(t, func(n int, w http.ResponseWriter) {
		if n <= 4 {
			<-release // the first deliveries hang until the replica is gone
		}
	})
	_, secret := h.create("ws_k", hookBody(rc.URL, `["call_started"]`, `{"max_retries":3,"retry_delay":1}`))
	rc.setSecret(secret)
	cfg := h.cfg
	cfg.AttemptTimeout = 5 * time.Second
	cfg.Dispatcher.AckWait = 6 * time.Second
	cfg.Dispatcher.Workers = 4

	ctxA, cancelA := context.WithCancel(h.ctx)
	dA, ncA := deps(t, h.env, false)
	a, err := StartDispatcher(ctxA, dA, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	want := map[string]bool{}
	for i := range n {
		want[h.ingest("ws_k", fmt.Sprintf(`{"event":"call_started","data":{"call_id":"c%d"}}`, i))] = true
	}
	testkit.Eventually(t, 15*time.Second, "replica A holding deliveries", func() bool { return len(rc.all()) >= 4 })
	ncA.Close() // killed: no ack, no nak
	cancelA()
	close(release)
	a.Stop()

	cfg.Dispatcher.AckWait = 6 * time.Second
	dB, _ := deps(t, h.env, false)
	b, err := StartDispatcher(h.ctx, dB, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	testkit.Eventually(t, 15*time.Second, fmt.Sprintf("every event delivered (%d received)", len(rc.all())), func() bool {
		seen := map[string]bool{}
		for _, r := range rc.all() {
			seen[r.eventID] = true
		}
		return len(seen) == n
	})
	bodies := map[string]string{}
	for _, r := range rc.all() {
		if !want[r.eventID] || !r.sigValid {
			t.Fatalf("unexpected delivery %+v", r)
		}
		if prev, ok := bodies[r.eventID]; ok && prev != string(r.body) {
			t.Fatalf("duplicate of %s has another body", r.eventID)
		}
		bodies[r.eventID] = string(r.body)
	}
}

var _ = delivery.HeaderEventID

// Two dispatcher replicas share the deliveries, and in normal operation
// no event reaches the receiver twice.
// An event whose jobs can never be stored (here: too large for one
// message once wrapped in a job) is retried on its own: the events fanned
// out in the same batches are delivered.
func TestAnEventThatCannotBeQueuedHoldsUpNoOther(t *testing.T) {
	h := newHarness(t, false)
	rc := newReceiver(t, nil)
	_, secret := h.create("ws_p", hookBody(rc.URL, `["call_started"]`, ""))
	rc.setSecret(secret)
	subject, err := events.PlatformSubject("ws_p", "call_started")
	if err != nil {
		t.Fatal(err)
	}
	nc := h.env.Conn(t)
	publish := func(callID, pad string) {
		t.Helper()
		data := `{"event":"call_started","data":{"call_id":"` + callID + `","pad":"` + pad + `"}}`
		if _, err := h.js.Publish(h.ctx, subject, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	// Stored before any dispatcher runs, so that they reach it together.
	const each = 20
	for i := range each {
		publish(fmt.Sprintf("before_%d", i), "")
	}
	publish("huge", strings.Repeat("x", int(nc.MaxPayload())-200))
	for i := range each {
		publish(fmt.Sprintf("after_%d", i), "")
	}
	d, _ := deps(t, h.env, false)
	ds, err := StartDispatcher(h.ctx, d, h.cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ds.Stop)
	testkit.Eventually(t, 15*time.Second, "every other event delivered", func() bool { return len(rc.all()) >= 2*each })
	for _, r := range rc.all() {
		if strings.Contains(string(r.body), `"huge"`) {
			t.Fatal("the event too large to queue was delivered")
		}
	}
	// It is still there, to be tried again: not acknowledged. (The others'
	// acknowledgements may reach the server after their deliveries did.)
	c, err := h.js.Consumer(h.ctx, events.PlatformStream, dispatcher.FanoutPlatformDurable)
	if err != nil {
		t.Fatal(err)
	}
	var info *jetstream.ConsumerInfo
	testkit.Eventually(t, 10*time.Second, "the huge event alone unacknowledged", func() bool {
		info, err = c.Info(h.ctx)
		return err == nil && info.NumAckPending == 1
	})
	if info.AckFloor.Stream >= uint64(each+1) {
		t.Fatalf("fan-out consumer acknowledged up to %d; want the huge event (%d) pending", info.AckFloor.Stream, each+1)
	}
}

func TestReplicasShareDeliveriesWithoutDuplicates(t *testing.T) {
	h := newHarness(t, false)
	rc := newReceiver(t, func(int, http.ResponseWriter) {})
	id, secret := h.create("ws_r", hookBody(rc.URL, `["call_started"]`, ""))
	rc.setSecret(secret)
	delivered := map[string]func() float64{}
	// Normal operation: an attempt answers within its time-out and a job
	// is acknowledged within its AckWait. The harness's 1 s and 2 s
	// (for the retry and redelivery tests) are missed by chance on a busy
	// machine, and an attempt that timed out after the receiver saw it, or
	// a job redelivered, is delivered twice, as at-least-once allows; this
	// test is about sharing, so nothing here may be retried by time.
	cfg := h.cfg
	cfg.AttemptTimeout, cfg.Dispatcher.AckWait = 30*time.Second, time.Minute
	for _, name := range []string{"A", "B"} {
		d, _ := deps(t, h.env, false)
		ds, err := StartDispatcher(h.ctx, d, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(ds.Stop)
		reg := d.Metrics.(prometheus.Gatherer)
		delivered[name] = func() float64 {
			families, _ := reg.Gather()
			for _, f := range families {
				if f.GetName() != "voiceai_webhook_attempts_total" {
					continue
				}
				for _, m := range f.GetMetric() {
					for _, l := range m.GetLabel() {
						if l.GetName() == "result" && l.GetValue() == "delivered" {
							return m.GetCounter().GetValue()
						}
					}
				}
			}
			return 0
		}
	}
	const n = 200
	for i := range n {
		h.ingest("ws_r", fmt.Sprintf(`{"event":"call_started","data":{"call_id":"c%d"}}`, i))
	}
	testkit.Eventually(t, 15*time.Second, "every event delivered", func() bool { return len(rc.all()) >= n })
	h.settled(t, "ws_r", id)
	seen := map[string]string{} // event id: its attempt number
	for _, r := range rc.all() {
		if first, twice := seen[r.eventID]; twice || !r.sigValid {
			t.Fatalf("event %s delivered twice (attempts %q and %q) or unsigned (signature valid: %v)", r.eventID, first, r.attempt, r.sigValid)
		}
		seen[r.eventID] = r.attempt
	}
	a, b := delivered["A"](), delivered["B"]()
	if len(seen) != n || a+b != n || a == 0 || b == 0 {
		t.Fatalf("%d events received; replica A delivered %.0f, B %.0f: want %d in all, shared", len(seen), a, b, n)
	}
}

// recent is the in-memory log's newest attempts of a webhook.
func recent(l app.AttemptLog, id string, limit int) []*webhooksv1.DeliveryAttempt {
	out := l.Recent(id, domain.LogFilter{}, limit)
	return out
}
