package multiprocess

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// balancer spreads requests over the gateway replicas in turn, as a load
// balancer does; a gateway leaves it before it is stopped (as a pod
// leaves its Service's endpoints) and joins once it is ready.
type balancer struct {
	mu  sync.Mutex
	gws []string
	n   atomic.Uint64
}

func (b *balancer) next() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.gws[int(b.n.Add(1))%len(b.gws)]
}

func (b *balancer) add(gw string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gws = append(b.gws, gw)
}

func (b *balancer) remove(gw string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, g := range b.gws {
		if g == gw {
			b.gws = append(b.gws[:i], b.gws[i+1:]...)
			return
		}
	}
}

// ack is a write the platform acknowledged: the client's key and the id
// it was given.
type ack struct {
	key, id string
	at      time.Time
}

// failure is an attempt a client must retry.
type failure struct {
	began, at  time.Time // the attempt was sent, and given up or refused
	code       int       // 0: no answer (refused, reset, or none within 5 s)
	retryAfter bool
}

// load is one kind of steady client traffic through the gateways. A write
// is retried with its Idempotency-Key until acknowledged; a read is tried
// once per tick.
type load struct {
	name    string
	mu      sync.Mutex
	acks    []ack
	fails   []failure
	refused []string // answers no retry can fix (a 4xx): each a test failure
	quit    chan struct{}
	stopped chan struct{}
	once    sync.Once
}

// attempt makes one request for key and returns the id it was given, or
// "" with the answer when the client must retry.
type attempt func(gw, key string) (id string, r result)

func startLoad(name string, pace time.Duration, lb *balancer, try attempt) *load {
	l := &load{name: name, quit: make(chan struct{}), stopped: make(chan struct{})}
	go func() {
		defer close(l.stopped)
		tick := time.NewTicker(pace)
		defer tick.Stop()
		for n := 0; ; n++ {
			key := name + "-" + strconv.Itoa(n)
			for {
				select {
				case <-l.quit:
					return
				default:
				}
				began := time.Now()
				id, r := try(lb.next(), key)
				at := time.Now()
				refused := id == "" && r.code >= 400 && r.code < 500 && r.code != http.StatusTooManyRequests
				l.mu.Lock()
				switch {
				case id != "":
					l.acks = append(l.acks, ack{key: key, id: id, at: at})
				case refused: // no retry can fix it
					l.refused = append(l.refused, key+": "+strconv.Itoa(r.code)+" "+string(r.body))
				default:
					l.fails = append(l.fails, failure{began: began, at: at, code: r.code, retryAfter: r.header.Get("Retry-After") != ""})
				}
				l.mu.Unlock()
				if id != "" || refused {
					break
				}
				time.Sleep(20 * time.Millisecond) // a client's back-off before retrying
			}
			select {
			case <-l.quit:
				return
			case <-tick.C:
			}
		}
	}()
	return l
}

func (l *load) acked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acks)
}

// recovered is when the load first succeeded after its last failure, and
// whether it has (a load that never failed has; at is then zero).
func (l *load) recovered() (at time.Time, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.fails) == 0 {
		return time.Time{}, true
	}
	last := l.fails[len(l.fails)-1].at
	// Acknowledgements are in time order: the first after last.
	i := sort.Search(len(l.acks), func(i int) bool { return l.acks[i].at.After(last) })
	if i == len(l.acks) {
		return time.Time{}, false
	}
	return l.acks[i].at, true
}

// lastFailure is the load's last failed attempt, if any.
func (l *load) lastFailure() (failure, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.fails) == 0 {
		return failure{}, false
	}
	return l.fails[len(l.fails)-1], true
}

// between is what the load saw in [from, to).
func (l *load) between(from, to time.Time) ([]ack, []failure) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var acks []ack
	var fails []failure
	for _, a := range l.acks {
		if !a.at.Before(from) && a.at.Before(to) {
			acks = append(acks, a)
		}
	}
	for _, f := range l.fails {
		if !f.at.Before(from) && f.at.Before(to) {
			fails = append(fails, f)
		}
	}
	return acks, fails
}

func (l *load) stop() {
	l.once.Do(func() { close(l.quit) })
	<-l.stopped
}

// errorWindow is the time clients saw failing: from the sending of the
// first failed attempt to the end of the last (0 when none failed). A
// request that waited out the client's patience counts for all its wait.
func errorWindow(fails []failure) time.Duration {
	if len(fails) == 0 {
		return 0
	}
	return fails[len(fails)-1].at.Sub(fails[0].began)
}

// quietRequest is one client request with a 5 s patience and the admin
// key: no answer is code 0, never a test failure.
func quietRequest(method, url, idempotencyKey, body string) result {
	return requestWith(patientClient, method, url, idempotencyKey, body)
}

// requestWith is quietRequest with client's patience.
func requestWith(client *http.Client, method, url, idempotencyKey, body string) result {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("x-api-key", adminKey)
	if idempotencyKey != "" {
		req.Header.Set("Idempotency-Key", idempotencyKey)
	}
	resp, err := client.Do(req)
	if err != nil {
		return result{header: http.Header{}}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return result{code: resp.StatusCode, header: resp.Header, body: b}
}

// idFrom reads field from a 2xx answer's JSON body.
func idFrom(r result, field string) string {
	if r.code < 200 || r.code > 299 {
		return ""
	}
	var m map[string]any
	if json.Unmarshal(r.body, &m) != nil {
		return ""
	}
	id, _ := m[field].(string)
	return id
}

// ticketCreates creates a ticket per key on agent.
func ticketCreates(agent string) attempt {
	return func(gw, key string) (string, result) {
		r := quietRequest("POST", gw+"/v1/convai/agents/"+agent+"/triage-tickets", key, `{"title":"chaos","qa_comment":"`+key+`"}`)
		return idFrom(r, "agentqa_ticket_id"), r
	}
}

// invocations runs the agent's tests (each twice) per key.
func invocations(agent string, tests []string) attempt {
	var refs []string
	for _, id := range tests {
		refs = append(refs, `{"test_id":"`+id+`"}`)
	}
	body := `{"tests":[` + strings.Join(refs, ",") + `],"repeat_count":2}`
	return func(gw, key string) (string, result) {
		r := quietRequest("POST", gw+"/v1/convai/agents/"+agent+"/run-tests", key, body)
		return idFrom(r, "id"), r
	}
}

// ingestions posts a call_started event per key, its call id the key.
func ingestions() attempt {
	return func(gw, key string) (string, result) {
		r := quietRequest("POST", gw+"/v1/convai/events", key, `{"event":"call_started","data":{"call_id":"`+key+`"}}`)
		if r.code != http.StatusAccepted {
			return "", r
		}
		return key, r
	}
}

// reads gets a ticket, then a page of the agent's tickets, in turn.
func reads(agent, ticket string) attempt {
	return func(gw, key string) (string, result) {
		url := gw + "/v1/convai/triage-tickets/" + ticket
		if n, _ := strconv.Atoi(key[strings.LastIndexByte(key, '-')+1:]); n%2 == 1 {
			url = gw + "/v1/convai/agents/" + agent + "/triage-tickets?page_size=20"
		}
		r := quietRequest("GET", url, "", "")
		if r.code != http.StatusOK {
			return "", r
		}
		return key, r
	}
}

// hookReceiver counts, per call id, the events delivered (by their event
// id, X-Service-Event-Id) and the deliveries. Delivery is at least once:
// a job whose acknowledgement a partition lost is delivered again with
// the same event id, which receivers deduplicate on. Two event ids for
// one call are a write the platform doubled.
type hookReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	events map[string]map[string]int // call id → event id → deliveries
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{events: map[string]map[string]int{}}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var env struct {
			Data struct {
				CallID string `json:"call_id"`
			} `json:"data"`
		}
		b, _ := io.ReadAll(r.Body)
		if json.Unmarshal(b, &env) == nil && env.Data.CallID != "" {
			h.mu.Lock()
			if h.events[env.Data.CallID] == nil {
				h.events[env.Data.CallID] = map[string]int{}
			}
			h.events[env.Data.CallID][r.Header.Get("X-Service-Event-Id")]++
			h.mu.Unlock()
		}
	}))
	t.Cleanup(h.Close)
	return h
}

// eventIDs are the ids of the events of calls delivered.
func (h *hookReceiver) eventIDs(calls []string) map[string]bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	ids := map[string]bool{}
	for _, call := range calls {
		for id := range h.events[call] {
			ids[id] = true
		}
	}
	return ids
}

// count is how many distinct events of call were delivered, and how many
// deliveries repeated one.
func (h *hookReceiver) count(call string) (events, redelivered int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, n := range h.events[call] {
		events++
		redelivered += n - 1
	}
	return events, redelivered
}
