package multiprocess

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
)

// Every process kind has its NATS connection dropped by the server in
// turn, under a steady load of ticket creates through the gateway. Each
// reconnects by itself (counted in its metrics), is ready again, does its
// job again (a request through it, a test run, a webhook delivery), and
// no acknowledged create is lost or doubled. Then the NATS server itself
// restarts: every process is not ready while it is down and ready again
// after, by itself.
func TestEveryProcessRecoversItsNATSConnection(t *testing.T) {
	// How long each recovery may take: each takes well under a second on
	// an idle machine; the bound is generous, so that a busy machine is
	// not a failure (the test is about recovering, not its speed).
	const recoverIn = 30 * time.Second
	receiver := newHookReceiver(t)

	c := newCluster(t)
	internal := "VOICEAI_METRICS_ADDR=127.0.0.1:0"
	hooksEnv := []string{internal, "VOICEAI_WEBHOOK_ALLOW_HOSTS=127.0.0.1"}
	procs := map[string]*proc{
		"identity":           c.start("identity", internal),
		"agents":             c.start("agents", internal),
		"tickets":            c.start("tickets", internal),
		"testing":            c.start("testing", internal),
		"testing-runner":     c.start("testing-runner", internal),
		"webhooks":           c.start("webhooks", hooksEnv...),
		"webhook-dispatcher": c.start("webhook-dispatcher", hooksEnv...),
	}
	gwProc, gw := c.gatewayProc(internal, "VOICEAI_RATE_LIMIT_PER_MINUTE=1000000", "VOICEAI_RATE_LIMIT_PER_HOUR=1000000")
	procs["gateway"] = gwProc
	endpoints := map[string]string{}
	for name, p := range procs {
		select {
		case addr := <-p.metrics:
			endpoints[name] = "http://" + addr
		case <-time.After(60 * time.Second):
			t.Fatalf("%s did not report its internal endpoint", name)
		}
	}

	// A process reports its internal endpoint before it serves: the first
	// creates wait for their service, as a client retrying a 503 would.
	var agent string
	eventually(t, 30*time.Second, "the agent is created", func() bool {
		r := do(t, "POST", gw+"/v1/convai/agents/create", adminKey, `{"name":"Hours","system_prompt":"We are open nine to five."}`)
		if r.code != http.StatusCreated {
			return false
		}
		agent = createdID(t, r, "agent_id")
		return true
	})
	var test string
	eventually(t, 30*time.Second, "the test is created", func() bool {
		r := do(t, "POST", gw+"/v1/convai/agent-testing/create", adminKey,
			`{"type":"llm","name":"hours","success_condition":"gives the hours","chat_history":[{"role":"user","message":"When are you open?","time_in_call_secs":1}]}`)
		if r.code != 200 {
			return false
		}
		test = createdID(t, r, "id")
		return true
	})
	eventually(t, 30*time.Second, "the webhook is created", func() bool {
		r := do(t, "POST", gw+"/v1/convai/webhooks", adminKey, `{"url":"`+receiver.URL+`/hook","events":["call_started"]}`)
		return r.code == http.StatusCreated
	})

	// The load: one ticket create after another, each retried with its own
	// Idempotency-Key until it is acknowledged.
	load := newTicketLoad(t, gw, agent)
	t.Cleanup(func() { load.stop() })

	kinds := []string{"gateway", "identity", "agents", "tickets", "testing", "testing-runner", "webhooks", "webhook-dispatcher"}
	for i, kind := range kinds {
		before := load.acked()
		if n := testenv.KickClients(t, c.nats, "voiceai-"+kind); n == 0 {
			t.Fatalf("%s has no NATS connection to drop", kind)
		}
		eventually(t, recoverIn, kind+" reconnects and is ready", func() bool {
			return connectionEvents(t, endpoints[kind], "reconnected") >= 1 && status(endpoints[kind]+"/readyz") == 200
		})
		if status(endpoints[kind]+"/healthz") != 200 {
			t.Fatalf("%s is not live after reconnecting", kind)
		}
		switch kind {
		case "identity":
			eventually(t, recoverIn, "identity serves", func() bool {
				return do(t, "POST", gw+"/v1/service-accounts", adminKey, `{"name":"after-kick"}`).code == 200
			})
		case "gateway", "agents":
			eventually(t, recoverIn, kind+" serves", func() bool {
				return do(t, "GET", gw+"/v1/convai/agents/"+agent, adminKey, "").code == 200
			})
		case "testing", "testing-runner":
			inv := createdID(t, do(t, "POST", gw+"/v1/convai/agents/"+agent+"/run-tests", adminKey, `{"tests":[{"test_id":"`+test+`"}]}`), "id")
			eventually(t, 2*recoverIn, "an invocation completes after "+kind+" reconnected", func() bool {
				var got struct {
					Status string `json:"status"`
				}
				r := do(t, "GET", gw+"/v1/convai/test-invocations/"+inv, adminKey, "")
				return json.Unmarshal(r.body, &got) == nil && got.Status == "completed"
			})
		case "webhooks", "webhook-dispatcher":
			call := fmt.Sprintf("call_%d", i)
			eventually(t, recoverIn, "the event is ingested", func() bool {
				return do(t, "POST", gw+"/v1/convai/events", adminKey, `{"event":"call_started","data":{"call_id":"`+call+`"}}`).code == http.StatusAccepted
			})
			eventually(t, recoverIn, "the event is delivered after "+kind+" reconnected", func() bool {
				n, _ := receiver.count(call)
				return n > 0
			})
		}
		eventually(t, recoverIn, "ticket creates go on after "+kind+" reconnected", func() bool { return load.acked() > before })
	}

	// The server itself goes down: every process is not ready (but live,
	// reconnecting) until it is back, then ready again without help.
	before := load.acked()
	restart := testenv.StopNATSServer(t, c.nats)
	for kind, endpoint := range endpoints {
		eventually(t, recoverIn, kind+" reports not ready while NATS is down", func() bool { return status(endpoint+"/readyz") == 503 })
		if status(endpoint+"/healthz") != 200 {
			t.Fatalf("%s is not live while it reconnects", kind)
		}
	}
	c.nats = restart()
	for kind, endpoint := range endpoints {
		eventually(t, recoverIn, kind+" is ready again once NATS is back", func() bool { return status(endpoint+"/readyz") == 200 })
	}
	eventually(t, recoverIn, "ticket creates go on after the server restarted", func() bool { return load.acked() > before })
	inv := createdID(t, do(t, "POST", gw+"/v1/convai/agents/"+agent+"/run-tests", adminKey, `{"tests":[{"test_id":"`+test+`"}]}`), "id")
	eventually(t, 2*recoverIn, "an invocation completes after the server restarted", func() bool {
		var got struct {
			Status string `json:"status"`
		}
		r := do(t, "GET", gw+"/v1/convai/test-invocations/"+inv, adminKey, "")
		return json.Unmarshal(r.body, &got) == nil && got.Status == "completed"
	})

	acked := load.stop()
	if len(acked) < len(kinds) {
		t.Fatalf("only %d creates were acknowledged", len(acked))
	}
	checkAcked(t, gw, acked)
	t.Logf("%d ticket creates acknowledged through %d connection drops; none lost or doubled", len(acked), len(kinds))
}

// checkAcked fails unless every acknowledged create (key → ticket id) is
// found, each key with a ticket of its own.
func checkAcked(t *testing.T, gw string, acked map[string]string) {
	t.Helper()
	seen := map[string]string{}
	for key, id := range acked {
		if other, dup := seen[id]; dup {
			t.Fatalf("keys %s and %s made the same ticket %s", other, key, id)
		}
		seen[id] = key
		if r := do(t, "GET", gw+"/v1/convai/triage-tickets/"+id, adminKey, ""); r.code != 200 {
			t.Fatalf("acknowledged ticket %s (key %s) is lost: %d %s", id, key, r.code, r.body)
		}
	}
}

// ticketLoad creates tickets one after another until stopped.
type ticketLoad struct {
	mu      sync.Mutex
	done    map[string]string // Idempotency-Key → ticket id
	quit    chan struct{}
	stopped chan struct{}
	once    sync.Once
}

func newTicketLoad(t *testing.T, gw, agent string) *ticketLoad {
	l := &ticketLoad{done: map[string]string{}, quit: make(chan struct{}), stopped: make(chan struct{})}
	go func() {
		defer close(l.stopped)
		for n := 0; n < 100_000; n++ {
			key := "load-" + strconv.Itoa(n)
			for attempt := 0; ; attempt++ {
				select {
				case <-l.quit:
					return
				default:
				}
				r := doQuiet("POST", gw+"/v1/convai/agents/"+agent+"/triage-tickets", key, `{"title":"load","qa_comment":"`+key+`"}`)
				var body struct {
					ID string `json:"agentqa_ticket_id"`
				}
				if r.code == http.StatusCreated && json.Unmarshal(r.body, &body) == nil && body.ID != "" {
					l.mu.Lock()
					l.done[key] = body.ID
					l.mu.Unlock()
					break
				}
				if r.code != 0 && r.code < 500 && r.code != http.StatusTooManyRequests {
					t.Errorf("create %s: %d %s", key, r.code, r.body)
					return
				}
				time.Sleep(20 * time.Millisecond) // a client's back-off before retrying the same key
			}
		}
	}()
	return l
}

func (l *ticketLoad) acked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.done)
}

// stop ends the load and returns every acknowledged create.
func (l *ticketLoad) stop() map[string]string {
	l.once.Do(func() { close(l.quit) })
	<-l.stopped
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.done
}

// patientClient gives up on an answer after 5 s, as a careful client does
// before retrying with the same Idempotency-Key: a reply lost with a
// dropped connection would otherwise hold it for the gateway's whole
// upstream time-out (30 s).
var patientClient = &http.Client{Timeout: 5 * time.Second}

// doQuiet is do without failing the test on a transport error (the
// gateway's own connection is dropped mid-test) or a time-out: code 0.
func doQuiet(method, url, idempotencyKey, body string) result {
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("x-api-key", adminKey)
	req.Header.Set("Idempotency-Key", idempotencyKey)
	resp, err := patientClient.Do(req)
	if err != nil {
		return result{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return result{code: resp.StatusCode, body: b}
}

func createdID(t *testing.T, r result, field string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil || m[field] == nil {
		t.Fatalf("no %s in %d %s", field, r.code, r.body)
	}
	return m[field].(string)
}

func status(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// readyz is a readiness endpoint's status and body (0 and the error when
// it did not answer).
func readyz(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
	return resp.StatusCode, strings.TrimSpace(string(body))
}

var connectionEvent = regexp.MustCompile(`voiceai_nats_connection_events_total\{event="([a-z]+)"\} (\d+)`)

// connectionEvents reads one count of voiceai_nats_connection_events_total
// from a process's metrics.
func connectionEvents(t *testing.T, endpoint, event string) int {
	resp, err := http.Get(endpoint + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, m := range connectionEvent.FindAllStringSubmatch(string(b), -1) {
		if m[1] == event {
			n, _ := strconv.Atoi(m[2])
			return n
		}
	}
	return 0
}
