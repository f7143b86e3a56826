package multiprocess

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	events "github.com/voiceai-platform/voiceai/proto-events"
)

// The cluster tier (make test-cluster, part of make test): the production
// shape on one machine — three NATS nodes with every stream at R3 (the
// third node in a network namespace of its own where the host allows it),
// the embedded store as an external MongoDB, and every service as its own
// binary, with two replicas of each but identity. Under a steady load
// through the gateways (ticket creates with Idempotency-Keys, test
// invocations, webhook events to a local receiver, and reads) it loses the
// node leading TICKETS, then the meta leader, partitions a node away and
// heals it, kills a replica of every service kind in turn, and restarts
// every process in turn. After each it checks that every acknowledged
// write is there once, every event was delivered, every invocation
// completed with each run counted once, and prints what clients saw.
func TestClusterChaos(t *testing.T) {
	if os.Getenv("VOICEAI_TEST_CLUSTER") == "" {
		t.Skip("the cluster tier runs with make test-cluster (VOICEAI_TEST_CLUSTER=1), which make test calls")
	}
	repeatFailuresLast(t)
	ns, nsErr := newNetns(t)
	if nsErr != nil {
		t.Logf("no network namespace (%v): nodes share loopback and the partition scenario is skipped", nsErr)
	}
	nodes := startNATSCluster(t, 3, ns)
	p := newPlatform(t, nodes)
	receiver := newHookReceiver(t)

	// Fixtures: an agent with a prompt the offline model answers from, two
	// tests, a webhook on call_started, and a ticket to read.
	agent := p.create("agent", "/v1/convai/agents/create", "agent_id",
		`{"name":"Chaos","conversation_config":{"agent":{"prompt":{"prompt":"We are open nine to five, Monday to Friday."}}}}`)
	var tests []string
	for i := range 2 {
		tests = append(tests, p.create(fmt.Sprintf("test-%d", i), "/v1/convai/agent-testing/create", "id",
			`{"type":"llm","name":"hours","success_condition":"gives the opening hours","chat_history":[{"role":"user","message":"When are you open?","time_in_call_secs":1}]}`))
	}
	ticket := p.create("ticket", "/v1/convai/agents/"+agent+"/triage-tickets", "agentqa_ticket_id", `{"title":"read me","qa_comment":"a ticket the reads load gets"}`)
	p.create("webhook", "/v1/convai/webhooks", "webhook_id", `{"url":"`+receiver.URL+`/hook","events":["call_started"]}`)

	loads := map[string]*load{
		"tickets":     startLoad("tickets", 25*time.Millisecond, p.lb, ticketCreates(agent)),
		"invocations": startLoad("invocations", 400*time.Millisecond, p.lb, invocations(agent, tests)),
		"events":      startLoad("events", 50*time.Millisecond, p.lb, ingestions()),
		"reads":       startLoad("reads", 50*time.Millisecond, p.lb, reads(agent, ticket)),
	}
	t.Cleanup(func() {
		for _, l := range loads {
			l.stop()
		}
	})
	writes := []string{"tickets", "invocations", "events"}
	p.waitProgress(loads, writes, 5, 60*time.Second, "the load flows")

	check := &checker{t: t, p: p, receiver: receiver, loads: loads, ticketOwner: map[string]string{}}
	scenarios := []struct {
		name string
		run  func() (elected time.Duration)
	}{
		{"node leading TICKETS killed", func() time.Duration {
			leader := p.streamLeader(events.TicketsStream, "")
			return p.killNode(nodes.index(leader), loads, writes)
		}},
		{"meta leader killed", func() time.Duration {
			return p.killNode(nodes.index(p.metaLeader()), loads, writes)
		}},
		{"node partitioned and healed", func() time.Duration {
			if ns == nil {
				t.Logf("partition skipped: %v", nsErr)
				return -1
			}
			return p.partition(ns, loads, writes)
		}},
		{"a replica of each service killed", func() time.Duration {
			for _, kind := range []string{"gateway", "identity", "agents", "tickets", "testing", "testing-runner", "webhooks", "webhook-dispatcher"} {
				p.killReplica(kind)
				p.waitProgress(loads, writes, 3, 60*time.Second, "the load flows after "+kind+" was killed")
			}
			return -1
		}},
		{"rolling restart", func() time.Duration {
			for _, kind := range []string{"identity", "agents", "tickets", "testing", "testing-runner", "webhooks", "webhook-dispatcher", "gateway"} {
				for range len(p.procs[kind]) {
					p.restartOldest(kind)
				}
			}
			p.waitProgress(loads, writes, 3, 60*time.Second, "the load flows after the rolling restart")
			return -1
		}},
	}
	// Each scenario's report is printed as it ends, so that a later
	// scenario's failure does not hide it.
	fmt.Println("cluster tier (3 NATS nodes, R3; 2 replicas of every service but identity):")
	for _, s := range scenarios {
		from := time.Now()
		elected := s.run()
		to := time.Now()
		if elected == -1 && strings.Contains(s.name, "partition") && ns == nil {
			continue
		}
		for _, line := range check.scenario(s.name, from, to, elected) {
			fmt.Println("  " + line)
		}
	}
	for _, l := range loads {
		for _, r := range l.refused {
			errorf(t, "%s: refused: %s", l.name, r)
		}
	}
}

// platform is the running cluster: nodes, store and service processes.
type platform struct {
	t     *testing.T
	nodes *natsNodes
	c     *cluster
	env   []string
	procs map[string][]*serviceProc
	lb    *balancer
}

// serviceProc is a service process with its internal endpoint (and, for
// a gateway, its public base URL).
type serviceProc struct {
	*proc
	internal, base string
}

func newPlatform(t *testing.T, nodes *natsNodes) *platform {
	p := &platform{t: t, nodes: nodes, procs: map[string][]*serviceProc{}, lb: &balancer{},
		c: &cluster{t: t, natsURL: nodes.urls(), mongoURI: startStore(t), dataDir: t.TempDir()}}
	p.env = []string{"VOICEAI_STREAM_REPLICAS=3", "VOICEAI_METRICS_ADDR=127.0.0.1:0",
		"VOICEAI_WEBHOOK_ALLOW_HOSTS=127.0.0.1", "VOICEAI_WEBHOOK_TIMEOUT=2s", "VOICEAI_WEBHOOK_ACK_WAIT=5s",
		"VOICEAI_RUNNER_ACK_WAIT=5s", "VOICEAI_RATE_LIMIT_PER_MINUTE=1000000", "VOICEAI_RATE_LIMIT_PER_HOUR=1000000"}
	// Started together, as on a fresh cluster: each waits for its streams.
	for _, kind := range []string{"identity", "agents", "agents", "tickets", "tickets", "testing", "testing",
		"testing-runner", "testing-runner", "webhooks", "webhooks", "webhook-dispatcher", "webhook-dispatcher", "gateway", "gateway"} {
		p.startService(kind)
	}
	return p
}

// create posts a fixture until it is created (services started a moment
// ago may still be catching up) and returns the id in field.
func (p *platform) create(what, path, field, body string) string {
	p.t.Helper()
	var id string
	var last result
	deadline := time.Now().Add(60 * time.Second)
	for id == "" {
		if time.Now().After(deadline) {
			fatalf(p.t, "the %s fixture is not created: %d %s", what, last.code, last.body)
		}
		last = quietRequest("POST", p.lb.next()+path, "fixture-"+what, body)
		id = idFrom(last, field)
		if last.code == http.StatusBadRequest || last.code == http.StatusUnprocessableEntity {
			fatalf(p.t, "the %s fixture is refused: %d %s", what, last.code, last.body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return id
}

// startStore runs the embedded store (allinone store) as a process of its
// own and returns its URI.
func startStore(t *testing.T) string {
	cmd := exec.Command(filepath.Join(binDir, "allinone"), "store")
	cmd.Env = append(os.Environ(), "VOICEAI_DATA_DIR="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	uri, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the store printed no URI: %v", err)
	}
	return strings.TrimSpace(uri)
}

// startService starts a replica of kind and returns once it is ready.
func (p *platform) startService(kind string) *serviceProc {
	p.t.Helper()
	sp := &serviceProc{}
	if kind == "gateway" {
		sp.proc, sp.base = p.c.gatewayProc(p.env...)
	} else {
		sp.proc = p.c.start(kind, p.env...)
	}
	select {
	case addr := <-sp.metrics:
		sp.internal = "http://" + addr
	case <-sp.done:
		fatalf(p.t, "%s exited at start", kind)
	case <-time.After(60 * time.Second):
		fatalf(p.t, "%s did not report its internal endpoint", kind)
	}
	eventually(p.t, 60*time.Second, kind+" is ready", func() bool { return status(sp.internal+"/readyz") == http.StatusOK })
	p.procs[kind] = append(p.procs[kind], sp)
	if sp.base != "" {
		p.lb.add(sp.base)
	}
	return sp
}

// killReplica kills (SIGKILL) the oldest replica of kind and starts a
// new one.
func (p *platform) killReplica(kind string) {
	sp := p.procs[kind][0]
	p.procs[kind] = p.procs[kind][1:]
	sp.kill()
	if sp.base != "" {
		p.lb.remove(sp.base) // the load balancer's health check finds it dead
	}
	p.startService(kind)
}

// restartOldest stops the oldest replica of kind gracefully (SIGTERM; a
// gateway first leaves the load balancer) and starts a new one, ready
// before the next is stopped: a rolling restart.
func (p *platform) restartOldest(kind string) {
	sp := p.procs[kind][0]
	p.procs[kind] = p.procs[kind][1:]
	if sp.base != "" {
		p.lb.remove(sp.base)
	}
	sp.stop()
	p.startService(kind)
}

// waitProgress waits until each of the loads named has n more
// acknowledged writes.
func (p *platform) waitProgress(loads map[string]*load, names []string, n int, within time.Duration, what string) {
	p.t.Helper()
	base := map[string]int{}
	for _, name := range names {
		base[name] = loads[name].acked()
	}
	eventually(p.t, within, what, func() bool {
		for _, name := range names {
			if loads[name].acked() < base[name]+n {
				return false
			}
		}
		return true
	})
}

// streams are those whose leaders the scenarios watch.
var streams = []string{events.TicketsStream, "TESTING", "TESTJOBS", "TESTRUNS", events.PlatformStream, events.WebhookDeliveriesStream}

// streamLeader is the leader of stream name that a running node other
// than except reports ("" when none knows one).
func (p *platform) streamLeader(name, except string) string {
	for i, node := range p.nodes.names {
		if node == except || p.nodes.procs[i] == nil {
			continue
		}
		if l := p.nodes.streamLeaders(i)[name]; l != "" {
			return l
		}
	}
	return ""
}

func (p *platform) metaLeader() string {
	var leader string
	eventually(p.t, 30*time.Second, "a meta leader is known", func() bool {
		for i := range p.nodes.names {
			if leader = p.nodes.metaLeader(i); leader != "" {
				return true
			}
		}
		return false
	})
	return leader
}

// elections waits, after node lost at `at`, for a new leader of every
// stream it led and of the meta group if it led that, and returns the
// longest time one took.
func (p *platform) elections(lost string, ledStreams []string, ledMeta bool, at time.Time) time.Duration {
	p.t.Helper()
	var longest time.Duration
	for _, s := range ledStreams {
		eventually(p.t, 60*time.Second, "a new leader of "+s, func() bool {
			l := p.streamLeader(s, lost)
			return l != "" && l != lost
		})
		longest = max(longest, time.Since(at))
	}
	if ledMeta {
		eventually(p.t, 60*time.Second, "a new meta leader", func() bool {
			for i, name := range p.nodes.names {
				if name == lost {
					continue
				}
				if l := p.nodes.metaLeader(i); l != "" && l != lost {
					return true
				}
			}
			return false
		})
		longest = max(longest, time.Since(at))
	}
	return longest
}

// led is what node leads: its streams, and whether it is the meta leader.
func (p *platform) led(node string) ([]string, bool) {
	var out []string
	for _, s := range streams {
		if p.streamLeader(s, "") == node {
			out = append(out, s)
		}
	}
	return out, p.metaLeader() == node
}

// killNode kills node i (SIGKILL) under the load, measures the elections
// it causes, waits for the writes to go on, and restarts it until it has
// caught up. It returns the longest election.
func (p *platform) killNode(i int, loads map[string]*load, writes []string) time.Duration {
	name := p.nodes.names[i]
	ledStreams, ledMeta := p.led(name)
	at := time.Now()
	p.nodes.kill(i)
	elected := p.elections(name, ledStreams, ledMeta, at)
	p.waitProgress(loads, writes, 5, 60*time.Second, "writes go on without "+name)
	p.nodes.start(i)
	eventually(p.t, 60*time.Second, name+" catches up after its restart", func() bool { return p.nodes.current(i) })
	return elected
}

// partition cuts the isolated node off the network under the load,
// measures the elections, waits for writes to go on, heals the link and
// waits for the node to catch up.
func (p *platform) partition(ns *netns, loads map[string]*load, writes []string) time.Duration {
	i := len(p.nodes.names) - 1
	name := p.nodes.names[i]
	ledStreams, ledMeta := p.led(name)
	at := time.Now()
	ns.cut(p.t)
	elected := p.elections(name, ledStreams, ledMeta, at)
	p.waitProgress(loads, writes, 5, 90*time.Second, "writes go on without the partitioned "+name)
	ns.heal(p.t)
	eventually(p.t, 90*time.Second, name+" catches up after the partition heals", func() bool { return p.nodes.current(i) })
	return elected
}

// checker verifies what each scenario's acknowledged writes became.
type checker struct {
	t           *testing.T
	p           *platform
	receiver    *hookReceiver
	loads       map[string]*load
	ticketOwner map[string]string // ticket id → the key that made it
}

// scenario checks the writes acknowledged in [from, to), applies the goals
// and returns the report lines. elected is the longest leader election
// the scenario caused (-1: no node was lost).
// outageSlack is how much longer than the election the error window may
// be before the tier calls it an outage: the clients' dead-link detection
// (2 missed pings of 1 s, then the reconnect), the time the load's own
// requests take to time out (a window counts a failed request from its
// sending: up to its 5 s patience), and what 2 shared cores add.
const outageSlack = 10 * time.Second

func (c *checker) scenario(name string, from, to time.Time, elected time.Duration) []string {
	t := c.t
	head := name
	if elected >= 0 {
		head += fmt.Sprintf(" (election %s)", elected.Round(time.Millisecond))
	}
	lines := []string{head}
	for _, lname := range []string{"tickets", "invocations", "events", "reads"} {
		acks, fails := c.loads[lname].between(from, to)
		found, dups, stale := c.verify(lname, acks)
		codes := map[int]int{}
		noRetryAfter := 0
		for _, f := range fails {
			codes[f.code]++
			if f.code == http.StatusServiceUnavailable && !f.retryAfter {
				noRetryAfter++
			}
		}
		window := errorWindow(fails)
		goal := ""
		if elected >= 0 && lname != "reads" {
			goal = "  goal (election + 1 s): MET"
			if window > elected+time.Second {
				goal = "  goal (election + 1 s): NOT MET"
			}
		}
		staleNote := ""
		if stale > 0 {
			staleNote = fmt.Sprintf("  (%d first read as not found)", stale)
		}
		lines = append(lines, fmt.Sprintf("  %-11s acknowledged %5d  found %5d  duplicates %3d  error window %7s  failed attempts %v%s%s",
			lname, len(acks), found, dups, window.Round(time.Millisecond), codes, goal, staleNote))
		if lname != "reads" && found != len(acks) {
			errorf(t, "%s / %s: %d acknowledged, %d found", name, lname, len(acks), found)
		}
		if lname != "events" && dups > 0 {
			errorf(t, "%s / %s: %d duplicates", name, lname, dups)
		}
		if codes[http.StatusInternalServerError] > 0 {
			errorf(t, "%s / %s: %d answers 500 (a store between leaders is a 503 to retry)", name, lname, codes[500])
		}
		if noRetryAfter > 0 {
			errorf(t, "%s / %s: %d answers 503 without Retry-After", name, lname, noRetryAfter)
		}
		// The window goal (election + 1 s) is measured and printed, not
		// asserted: on two shared cores a partitioned client also needs
		// its missed pings (up to 3 s) to notice the cut, and timing is
		// noise (a timed test fails by luck). What fails the tier is an
		// outage: a window beyond the election plus outageSlack.
		if elected >= 0 && window > elected+outageSlack {
			errorf(t, "%s / %s: error window %s exceeds the election (%s) + %s: an outage, not an election", name, lname, window, elected, outageSlack)
		}
	}
	return lines
}

// verify returns how many acknowledged writes are found and how many
// duplicates there are: tickets made twice for one key, runs counted
// twice, events delivered more than once; and how many acknowledged
// tickets were first read as not found (stale reads).
func (c *checker) verify(lname string, acks []ack) (found, dups, stale int) {
	gw := c.p.lb.next
	switch lname {
	case "tickets":
		for _, a := range acks {
			if other, ok := c.ticketOwner[a.id]; ok && other != a.key {
				dups++
			}
			c.ticketOwner[a.id] = a.key
			// A 404 is read again: right after a partition heals, the cut
			// node can still believe it leads the stream and answer first,
			// without the writes made while it was away, until it hears the
			// new leader (a stale read, counted and printed). A write not
			// there after 30 s is lost.
			var r result
			notFound := false
			eventuallyQuiet(30*time.Second, func() bool {
				r = quietRequest("GET", gw()+"/v1/convai/triage-tickets/"+a.id, "", "")
				notFound = notFound || r.code == http.StatusNotFound
				return r.code == http.StatusOK
			})
			if r.code == http.StatusOK {
				found++
				if notFound {
					stale++
					c.t.Logf("ticket %s (key %s, acknowledged at %s) read as not found before it was found", a.id, a.key, a.at.Format(time.RFC3339Nano))
				}
			} else {
				// Say which, and what reading it answered, for the
				// investigation a loss calls for.
				msg := fmt.Sprintf("ticket %s (key %s, acknowledged at %s) not found: %d %.200s", a.id, a.key, a.at.Format(time.RFC3339Nano), r.code, r.body)
				keep(c.t, msg)
				c.t.Log(msg)
			}
		}
	case "invocations":
		for _, a := range acks {
			var inv struct {
				Status   string `json:"status"`
				TestRuns []struct {
					TestRunID string `json:"test_run_id"`
				} `json:"test_runs"`
			}
			done := eventuallyQuiet(90*time.Second, func() bool {
				r := quietRequest("GET", gw()+"/v1/convai/test-invocations/"+a.id, "", "")
				return json.Unmarshal(r.body, &inv) == nil && inv.Status == "completed"
			})
			ids := map[string]bool{}
			for _, run := range inv.TestRuns {
				ids[run.TestRunID] = true
			}
			if done {
				found++
			}
			dups += len(inv.TestRuns) - len(ids)
			if done && len(ids) != 4 {
				errorf(c.t, "invocation %s completed with %d runs, want 4", a.id, len(ids))
			}
		}
	case "events":
		for _, a := range acks {
			if eventuallyQuiet(60*time.Second, func() bool { return c.receiver.count(a.key) > 0 }) {
				found++
				dups += c.receiver.count(a.key) - 1
			}
		}
	case "reads":
		return len(acks), 0, 0
	}
	return found, dups, stale
}

// eventuallyQuiet is eventually without failing: whether cond held in time.
func eventuallyQuiet(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// Services started together on a fresh cluster all come up, every time:
// a new R3 stream answers nothing until it has a leader, and each process
// waits for its streams instead of exiting. Ten fresh clusters, one
// process of every kind each, all started at once.
func TestClusterFreshStartTenOfTen(t *testing.T) {
	if os.Getenv("VOICEAI_TEST_CLUSTER") == "" {
		t.Skip("the cluster tier runs with make test-cluster (VOICEAI_TEST_CLUSTER=1), which make test calls")
	}
	kinds := []string{"identity", "agents", "tickets", "testing", "testing-runner", "webhooks", "webhook-dispatcher", "gateway"}
	for round := range 10 {
		t.Run(fmt.Sprintf("round-%d", round+1), func(t *testing.T) {
			nodes := startNATSNodes(t, 3)
			c := &cluster{t: t, natsURL: nodes.urls(), mongoURI: startStore(t), dataDir: t.TempDir()}
			started := time.Now()
			var procs []*proc
			for _, kind := range kinds {
				procs = append(procs, c.start(kind, "VOICEAI_STREAM_REPLICAS=3", "VOICEAI_METRICS_ADDR=127.0.0.1:0"))
			}
			var gw string
			for i, p := range procs {
				if kinds[i] == "gateway" {
					select {
					case addr := <-p.addr:
						gw = "http://" + addr
					case <-time.After(60 * time.Second):
						t.Fatal("the gateway did not report its address")
					}
				}
				select {
				case addr := <-p.metrics:
					eventually(t, 60*time.Second, kinds[i]+" is ready", func() bool { return status("http://"+addr+"/readyz") == http.StatusOK })
				case <-p.done:
					t.Fatalf("%s exited at start", kinds[i])
				case <-time.After(60 * time.Second):
					t.Fatalf("%s did not report its internal endpoint", kinds[i])
				}
			}
			ready := time.Since(started)
			// Ready means serving: the first request through the gateway works.
			eventually(t, 30*time.Second, "the gateway serves the admin key", func() bool {
				return do(t, "GET", gw+"/v1/service-accounts", adminKey, "").code == http.StatusOK
			})
			if r := do(t, "POST", gw+"/v1/convai/agents/create", adminKey, `{"name":"fresh"}`); r.code != http.StatusCreated {
				t.Fatalf("an agent is not created once every process is ready: %d %s", r.code, r.body)
			}
			t.Logf("round %d: %d processes ready %s after starting together", round+1, len(procs), ready.Round(time.Millisecond))
		})
	}
}
