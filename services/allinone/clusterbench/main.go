// Command clusterbench states the cost of replication, in one run on this
// machine. It brings up the cluster tier's shape (internal/clustertier,
// as make test-cluster runs it: three nats-server processes with every
// stream at R3, each service as its own binary, the embedded store as a
// process of its own), measures, and then does the same on one node with
// every stream at R1:
//
//	(a) optimistic appends (expected last subject sequence 0) of
//	    ticket-create events, by 16 publishers, to a stream of the same
//	    replication on that cluster: the raw rate, the limit (b) and (c)
//	    are read against;
//	(b) ticket creates through the gateway by 16 clients;
//	(c) signed webhook deliveries to one local receiver, the events
//	    published to the PLATFORM stream as the webhooks bench does.
//
// The issue states no goal for these ratios: they are stated. The cost of
// replication is (b)'s share of (a) on R3 over its share on R1.
//
//	go run ./services/allinone/clusterbench
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/wire"
	"github.com/voiceai-platform/voiceai/services/allinone/internal/benchkit"
	"github.com/voiceai-platform/voiceai/services/allinone/internal/benchproc"
	"github.com/voiceai-platform/voiceai/services/allinone/internal/clustertier"
)

const (
	adminKey  = "vak_clusterbench_admin_key_0123456789"
	workspace = "ws_default" // the bootstrapped admin key's
	clients   = 16
)

// kinds are the service processes the figures need, one of each; the
// gateway last, once the rest serve.
var kinds = []string{"identity", "agents", "tickets", "webhooks", "webhook-dispatcher", "gateway"}

func main() {
	creates := flag.Int("creates", 10_000, "ticket creates through the gateway, and raw appends, per replication")
	evts := flag.Int("events", 5000, "webhook events published (one delivery each) per replication")
	single := flag.Bool("r1", true, "also measure one node at R1, for the cost of replication")
	flag.Parse()
	fmt.Printf("cluster: the cluster tier's processes (nats-server nodes, the store, one process each of %s; "+
		"tickets' read index in memory, as on the embedded store), 16 clients, %d cores shared with everything else running\n",
		strings.Join(kinds, ", "), runtime.NumCPU())
	if err := run(*creates, *evts, *single); err != nil {
		var skip skipped
		if errors.As(err, &skip) {
			fmt.Println("cluster: skipped:", skip.why)
			return
		}
		fmt.Fprintln(os.Stderr, "clusterbench:", err)
		os.Exit(1)
	}
}

// skipped is a reason the bench cannot run here (not a failure of the
// platform): no Go toolchain to build the binaries, or no cluster forms.
type skipped struct{ why string }

func (s skipped) Error() string { return s.why }

// figures are one replication's measurements, each per second.
type figures struct {
	raw, creates, deliveries float64
	pause                    time.Duration // the longest between two deliveries
	pauseAfter               int           // deliveries before it
}

func run(creates, evts int, single bool) error {
	if _, err := exec.LookPath("go"); err != nil {
		return skipped{"no go command to build the service binaries: " + err.Error()}
	}
	bins, err := testenv.Binaries(clustertier.Binaries...)
	if err != nil {
		return err
	}
	rcv := newReceiver()
	defer rcv.Close()
	shapes := []int{3}
	if single {
		shapes = append(shapes, 1)
	}
	measured := map[int]figures{}
	for _, replicas := range shapes {
		began := time.Now()
		f, err := measure(bins, replicas, creates, evts, rcv)
		if err != nil {
			return err
		}
		measured[replicas] = f
		r := fmt.Sprintf("R%d", replicas)
		fmt.Printf("  %d nats-server node(s), every stream %s (%s from start to stop):\n", replicas, r, time.Since(began).Round(time.Second))
		fmt.Printf("    (a) raw appends           %7.0f/s  (%d ticket-create events, 16 publishers): the limit\n", f.raw, creates)
		fmt.Printf("    (b) creates via gateway   %7.0f/s  (%d creates, 16 clients) = %.3f of raw %s (stated, no goal)\n", f.creates, creates, f.creates/f.raw, r)
		fmt.Printf("    (c) webhook deliveries    %7.0f/s  (%d signed deliveries to 1 webhook) = %.3f of raw %s (stated, no goal); the longest pause between two %s, after %d\n",
			f.deliveries, evts, f.deliveries/f.raw, r, f.pause.Round(time.Millisecond), f.pauseAfter)
	}
	if single {
		r3, r1 := measured[3], measured[1]
		fmt.Printf("  cost of replication, creates on R3 / on R1, each against its raw rate: %.3f / %.3f = %.3f (stated, no goal)\n",
			r3.creates/r3.raw, r1.creates/r1.raw, (r3.creates/r3.raw)/(r1.creates/r1.raw))
		fmt.Printf("    as rates, R3 / R1: creates %.3f, raw appends %.3f, deliveries %.3f\n",
			r3.creates/r1.creates, r3.raw/r1.raw, r3.deliveries/r1.deliveries)
	}
	return nil
}

// measure brings up the tier on nodes nodes with every stream at that
// many replicas, takes the three figures, and stops it all.
func measure(bins string, nodes, creates, evts int, rcv *receiver) (figures, error) {
	var f figures
	dir, err := os.MkdirTemp("", "voiceai-clusterbench-")
	if err != nil {
		return f, err
	}
	defer os.RemoveAll(dir)
	t, err := startTier(bins, dir, nodes)
	if err != nil {
		return f, err
	}
	defer t.stop()
	nc, err := nats.Connect(t.nodes.URLs())
	if err != nil {
		return f, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return f, err
	}
	if f.raw, err = rawAppends(js, nodes, creates); err != nil {
		return f, err
	}
	if f.creates, err = t.createTickets(creates); err != nil {
		return f, err
	}
	if f.deliveries, err = t.deliveries(js, rcv, evts); err != nil {
		return f, err
	}
	f.pause, f.pauseAfter = rcv.longestPause()
	return f, nil
}

// tier is the running cluster: nodes, store and one process of each kind.
type tier struct {
	nodes     *clustertier.Nodes
	stopStore func()
	procs     []*benchproc.Proc
	api       *benchkit.Client
	agentID   string
}

func (t *tier) stop() {
	for i := len(t.procs) - 1; i >= 0; i-- {
		t.procs[i].Stop()
	}
	if t.stopStore != nil {
		t.stopStore()
	}
	t.nodes.Close()
}

// startTier starts the nodes, the store and the services as the cluster
// tier does, and returns once the gateway serves an agent's creation.
func startTier(bins, dir string, nodes int) (*tier, error) {
	hosts := make([]string, nodes)
	for i := range hosts {
		hosts[i] = "127.0.0.1"
	}
	nn, err := clustertier.LaunchNATS(filepath.Join(bins, "nats-server"), filepath.Join(dir, "nats"), hosts, hosts, "")
	if err != nil {
		return nil, skipped{"the NATS nodes do not start: " + err.Error()}
	}
	t := &tier{nodes: nn}
	if nodes > 1 && !within(60*time.Second, func() bool { return nn.MetaLeader(0) != "" }) {
		t.stop()
		return nil, skipped{fmt.Sprintf("%d NATS nodes elect no JetStream meta leader within 60s", nodes)}
	}
	uri, stopStore, _, err := testenv.StoreProcess(filepath.Join(dir, "store"))
	if err != nil {
		t.stop()
		return nil, err
	}
	t.stopStore = stopStore
	env := append(clustertier.ServiceEnv(nn.URLs(), uri, filepath.Join(dir, "data"), adminKey),
		"VOICEAI_STREAM_REPLICAS="+strconv.Itoa(nodes), "VOICEAI_READ_INDEX=memory", "VOICEAI_WEBHOOK_ALLOW_HOSTS=127.0.0.1",
		"VOICEAI_RATE_LIMIT_PER_MINUTE=100000000", "VOICEAI_RATE_LIMIT_PER_HOUR=100000000")
	var base string
	for _, kind := range kinds {
		metrics, err := benchproc.FreePort()
		if err != nil {
			t.stop()
			return nil, err
		}
		procEnv := env
		if kind == "gateway" {
			addr, err := benchproc.FreePort()
			if err != nil {
				t.stop()
				return nil, err
			}
			base = "http://" + addr
			procEnv = append(procEnv, "VOICEAI_HTTP_ADDR="+addr)
		}
		p, err := benchproc.Start(filepath.Join(bins, kind), procEnv, metrics)
		if err != nil {
			t.stop()
			return nil, err
		}
		t.procs = append(t.procs, p)
		// Each waits for its streams: on a fresh cluster, seconds.
		if err := p.WaitReady("http://"+metrics, 90*time.Second); err != nil {
			t.stop()
			return nil, fmt.Errorf("%s: %w", kind, err)
		}
	}
	t.api = benchkit.NewClient(base, adminKey, clients)
	// The gateway may have loaded the keys before identity bootstrapped
	// the admin key, and a fresh cluster may still move a new stream's
	// leader: the agent is created as a client would, retrying.
	var last error
	if !within(60*time.Second, func() bool {
		t.agentID, last = t.api.CreateAgent(`{"name":"Cluster bench"}`, "clusterbench-agent")
		return last == nil
	}) {
		t.stop()
		return nil, fmt.Errorf("no agent created within 60s: %v", last)
	}
	return t, nil
}

// within polls cond until it holds, or reports false after d.
func within(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// rawAppends is the limit: n ticket-create events, encoded before the
// clock starts, appended create-only by 16 publishers to a file stream of
// its own (benchraw.>) with the given replicas, deleted after; 100 more
// warm it first.
func rawAppends(js jetstream.JetStream, replicas, n int) (float64, error) {
	ctx := context.Background()
	cfg := jetstream.StreamConfig{Name: "BENCHRAW", Subjects: []string{"benchraw.>"}, Storage: jetstream.FileStorage, Replicas: replicas}
	var err error
	if !within(60*time.Second, func() bool { _, err = js.CreateOrUpdateStream(ctx, cfg); return err == nil }) {
		return 0, fmt.Errorf("the raw stream is not created: %w", err)
	}
	defer func() { _ = js.DeleteStream(ctx, "BENCHRAW") }()
	const warm = 100
	msgs := make([]*nats.Msg, warm+n+1)
	for i := 1; i < len(msgs); i++ {
		if msgs[i], err = ticketCreated(ctx, i); err != nil {
			return 0, err
		}
	}
	appendOne := func(i int64) error {
		_, err := js.PublishMsg(ctx, msgs[i], jetstream.WithExpectLastSequencePerSubject(0))
		return err
	}
	if _, err := benchkit.InParallel(clients, warm, appendOne); err != nil {
		return 0, err
	}
	took, err := benchkit.InParallel(clients, n, func(i int64) error { return appendOne(warm + i) })
	return float64(n) / took.Seconds(), err
}

// ticketCreated is the event the tickets service appends for a create,
// on the raw stream's subject.
func ticketCreated(ctx context.Context, i int) (*nats.Msg, error) {
	id := fmt.Sprintf("tkt_raw%07d", i)
	now := time.Now()
	meta := esproto.Meta(ctx, workspace, "", now)
	qa := "It took long."
	t := &ticketsv1.Ticket{
		TicketId: id, WorkspaceId: workspace, AgentId: "agent_clusterbench", Title: "Slow answer",
		Status: "open", Priority: "high", Source: "qa", OwnerUserId: "sa_admin", Labels: []string{},
		CreatedAtUnixMs: now.UnixMilli(), CreatedAtUnixSecs: now.Unix(), UpdatedAtUnixSecs: now.Unix(),
		QaComment: &qa, ConversationIds: []string{},
	}
	return eventstore.NewEventMsg(ctx, "benchraw."+id, meta, &ticketsv1.TicketCreated{Meta: meta, Ticket: t})
}

// createTickets creates 100 tickets to warm up, then n with 16 clients as
// fast as they are answered, and returns the rate of the n.
func (t *tier) createTickets(n int) (float64, error) {
	create := func(prefix string) func(i int64) error {
		return func(i int64) error {
			b, code, err := t.api.Do("POST", "/v1/convai/agents/"+t.agentID+"/triage-tickets",
				`{"title":"Slow answer","qa_comment":"It took long.","priority":"high"}`, prefix+strconv.FormatInt(i, 10))
			if err == nil && code != http.StatusCreated {
				err = fmt.Errorf("create: %d %.200s", code, b)
			}
			return err
		}
	}
	if _, err := benchkit.InParallel(clients, 100, create("warm-")); err != nil {
		return 0, err
	}
	took, err := benchkit.InParallel(clients, n, create("bench-"))
	return float64(n) / took.Seconds(), err
}

// stallWait lets a publish wait for room among the client's 4,000
// outstanding asynchronous publishes instead of failing after 200 ms: on
// the R3 cluster, with 2 busy cores, acks can lag that long.
var stallWait = jetstream.WithStallWait(time.Minute)

// deliveries subscribes one webhook to call_started, waits until the
// dispatcher delivers to it, then publishes n events at once (async, as
// the webhooks bench does) and returns the rate at which their signed
// deliveries reached the receiver.
func (t *tier) deliveries(js jetstream.JetStream, rcv *receiver, n int) (float64, error) {
	round := rcv.nextRound()
	if err := t.api.Call("POST", "/v1/convai/webhooks", `{"url":"`+rcv.URL+`/hook","events":["call_started"]}`, nil); err != nil {
		return 0, err
	}
	subject, err := events.PlatformSubject(workspace, "call_started")
	if err != nil {
		return 0, err
	}
	publish := func(id string) error {
		msg := nats.NewMsg(subject)
		msg.Data = []byte(`{"event":"call_started","timestamp":"` + wire.FormatTimestamp(time.Now()) + `","data":{"call_id":"` + id + `"}}`)
		_, err := js.PublishMsgAsync(msg, stallWait)
		return err
	}
	// The dispatcher knows the webhook once a probe event reaches it.
	probes := 0
	if !within(60*time.Second, func() bool {
		probes++
		return publish(round+"probe-"+strconv.Itoa(probes)) == nil && rcv.count(round+"probe-") > 0
	}) {
		return 0, errors.New("no webhook delivery within 60s of the webhook's creation")
	}
	measured := round + "m-"
	start := time.Now()
	rcv.watchPauses()
	for i := range n {
		if err := publish(measured + strconv.Itoa(i)); err != nil {
			return 0, err
		}
	}
	<-js.PublishAsyncComplete()
	if !within(90*time.Second, func() bool { return rcv.count(measured) >= n }) {
		return 0, fmt.Errorf("%d of %d deliveries after 90s", rcv.count(measured), n)
	}
	took := time.Since(start)
	if u := rcv.unsigned.Load(); u > 0 {
		return 0, fmt.Errorf("%d deliveries carried no signature", u)
	}
	return float64(n) / took.Seconds(), nil
}
