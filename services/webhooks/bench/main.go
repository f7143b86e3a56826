// Command bench measures webhook delivery on embedded NATS and FerretDB
// against a local receiver: deliveries per second with 1 and with 10
// webhooks subscribed to the same events, and the latency from event
// publish to delivery received at a steady 200 events per second; and
// first, what the ElevenLabs and Standard Webhooks signatures add to each
// delivery beyond X-Service-Signature (goal < 10 µs); last, reads of the
// durable delivery log at two sizes (see durableLogReads).
//
//	go run ./services/webhooks/bench
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	events "github.com/voiceai-platform/voiceai/proto-events"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/embedded"
	"github.com/voiceai-platform/voiceai/pkg/embedded/docstore"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/pkg/runtime"
	"github.com/voiceai-platform/voiceai/pkg/warmup"
	"github.com/voiceai-platform/voiceai/pkg/wire"
	"github.com/voiceai-platform/voiceai/services/webhooks"
	"github.com/voiceai-platform/voiceai/services/webhooks/adapters"
	"github.com/voiceai-platform/voiceai/services/webhooks/dispatcher"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

type receiver struct {
	count atomic.Int64
	mu    sync.Mutex
	lat   []time.Duration
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	now := time.Now()
	var env struct {
		Data struct {
			SentNs int64 `json:"sent_ns"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &env) == nil && env.Data.SentNs > 0 {
		r.mu.Lock()
		r.lat = append(r.lat, now.Sub(time.Unix(0, env.Data.SentNs)))
		r.mu.Unlock()
	}
	r.count.Add(1)
}

func main() {
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the first 1-webhook round of the dispatcher (dispatcher, NATS, store and receiver share the process) to this file")
	flag.Parse()
	if err := run(*cpuProfile); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// profiled runs f under a CPU profile written to path (none when path is
// empty).
func profiled(path string, f func() error) error {
	if path == "" {
		return f()
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	defer out.Close()
	if err := pprof.StartCPUProfile(out); err != nil {
		return err
	}
	defer pprof.StopCPUProfile()
	return f()
}

// lastSeq is the last sequence of stream.
func lastSeq(ctx context.Context, js jetstream.JetStream, stream string) (uint64, error) {
	str, err := js.Stream(ctx, stream)
	if err != nil {
		return 0, err
	}
	return str.CachedInfo().State.LastSeq, nil
}

// durableLogKeptUp reports how long after the last delivery of the
// throughput run every attempt recorded was in the durable delivery log
// (its work queue, at sequence before when the run began, past want more
// records and empty), and how many of the run's attempts it holds.
func durableLogKeptUp(ctx context.Context, js jetstream.JetStream, log *adapters.AttemptPages, ws string, want int, before uint64) error {
	t0 := time.Now()
	if err := logCaughtUp(ctx, js, before+uint64(want)); err != nil {
		return err
	}
	caughtUp := time.Since(t0)
	held := map[string]bool{}
	if err := log.Each(ctx, func(a *webhooksv1.DeliveryAttempt) {
		if a.GetWorkspaceId() == ws {
			held[a.GetAttemptId()] = true
		}
	}); err != nil {
		return err
	}
	fmt.Printf("             the durable log held every attempt %s after the last delivery: %d of the run's %d\n",
		caughtUp.Round(time.Millisecond), len(held), want)
	return nil
}

// logDrained returns once the durable delivery log's work queue is empty.
func logDrained(ctx context.Context, js jetstream.JetStream) error { return logCaughtUp(ctx, js, 0) }

// logCaughtUp returns once the durable delivery log's work queue holds
// nothing and has taken records up to sequence last at least.
func logCaughtUp(ctx context.Context, js jetstream.JetStream, last uint64) error {
	t0 := time.Now()
	for {
		str, err := js.Stream(ctx, events.WebhookAttemptsLogStream)
		if err != nil {
			return err
		}
		info := str.CachedInfo()
		if info.State.Msgs == 0 && info.State.LastSeq >= last {
			return nil
		}
		if time.Since(t0) > 60*time.Second {
			return fmt.Errorf("the durable log is not caught up after 60s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// addedSigning is the time per delivery of the signatures added to
// X-Service-Signature (ElevenLabs-Signature and webhook-signature, with
// the Standard Webhooks key decoded from the secret) over a body of n
// bytes.
func addedSigning(n int) time.Duration {
	secret, _ := domain.NewSecret()
	body := []byte(`{"event":"ticket_updated","timestamp":"2026-01-01T00:00:00.000Z","data":{"x":"` + strings.Repeat("x", max(0, n-80)) + `"}}`)
	r := testing.Benchmark(func(b *testing.B) {
		for b.Loop() {
			_ = domain.SignElevenLabs([]byte(secret), body, 1_800_000_000)
			_ = domain.SignStandard(domain.StandardKey([]byte(secret)), "evt_01JBENCH", 1_800_000_000, body)
		}
	})
	return time.Duration(r.NsPerOp())
}

func run(cpuProfile string) error {
	small, large := addedSigning(1<<10), addedSigning(16<<10)
	fmt.Printf("added signing per delivery: %s (1 KiB body), %s (16 KiB); goal < 10µs at 1 KiB: %v\n",
		small.Round(10*time.Nanosecond), large.Round(10*time.Nanosecond), small < 10*time.Microsecond)
	dir, err := os.MkdirTemp("", "webhooks-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ns, err := embedded.StartNATS(embedded.NATSOptions{StoreDir: filepath.Join(dir, "nats"), Port: -1})
	if err != nil {
		return err
	}
	defer ns.Shutdown()
	store, err := docstore.Start(filepath.Join(dir, "mongo"))
	if err != nil {
		return err
	}
	defer store.Close()
	log := slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := prometheus.NewRegistry()
	link, mc, err := runtime.Connect(ctx, "bench", ns.ClientURL(), store.URI, log, reg)
	if err != nil {
		return err
	}
	defer link.Close()
	d, err := runtime.NewDeps(link.NC, mc, log, reg, 1)
	if err != nil {
		return err
	}
	cfg := webhooks.Config{Secret: "bench-secret", AllowHosts: []string{"127.0.0.1"}, Dispatcher: dispatcher.Options{Workers: 128, NoTickets: true}}
	svc, err := webhooks.Start(ctx, d, cfg)
	if err != nil {
		return err
	}
	defer svc.Stop()
	// The dispatcher on its own connection, as its own process would be.
	dnc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		return err
	}
	defer dnc.Close()
	dd, err := runtime.NewDeps(dnc, nil, log, prometheus.NewRegistry(), 1)
	if err != nil {
		return err
	}
	ds, err := webhooks.StartDispatcher(ctx, dd, cfg, nil)
	if err != nil {
		return err
	}
	defer ds.Stop()

	rcv := &receiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()

	mk := func(ws string, n int) error {
		p := principal.Principal{WorkspaceID: ws, UserID: "bench", Permissions: []string{"all"}}
		for range n {
			url := srv.URL + "/hook"
			if _, _, err := svc.App.Create(ctx, principal.Caller{Principal: p}, domain.Input{URL: &url, Events: []string{"call_started"}}); err != nil {
				return err
			}
		}
		return nil
	}
	body := func(i int, sentNs int64) []byte {
		return []byte(`{"event":"call_started","timestamp":"` + wire.FormatTimestamp(time.Now()) + `","data":{"call_id":"c` + strconv.Itoa(i) + `","sent_ns":` + strconv.FormatInt(sentNs, 10) + `}}`)
	}
	publish := func(ws string, i int, sentNs int64) (jetstream.PubAckFuture, error) {
		subject, _ := events.PlatformSubject(ws, "call_started")
		msg := nats.NewMsg(subject)
		msg.Data = body(i, sentNs)
		return d.JS.PublishMsgAsync(msg, jetstream.WithStallWait(time.Minute))
	}
	// delivered publishes evts events with publishOne and returns the rate
	// at which the receiver got want deliveries of them.
	delivered := func(evts, want int, publishOne func(i int) (jetstream.PubAckFuture, error)) (float64, error) {
		start := rcv.count.Load()
		t0 := time.Now()
		for i := range evts {
			if _, err := publishOne(i); err != nil {
				return 0, err
			}
		}
		<-d.JS.PublishAsyncComplete()
		deadline := time.Now().Add(90 * time.Second)
		for rcv.count.Load() < start+int64(want) {
			if time.Now().After(deadline) {
				return 0, fmt.Errorf("%d of %d deliveries after 90s", rcv.count.Load()-start, want)
			}
			time.Sleep(2 * time.Millisecond)
		}
		return float64(want) / time.Since(t0).Seconds(), nil
	}
	throughput := func(ws string, hooks, evts int) (float64, error) {
		if err := mk(ws, hooks); err != nil {
			return 0, err
		}
		return delivered(evts, hooks*evts, func(i int) (jetstream.PubAckFuture, error) { return publish(ws, i, 0) })
	}
	fl, err := startFloor(ctx, d.JS, srv.URL+"/floor", cfg.Dispatcher.Workers)
	if err != nil {
		return err
	}
	defer fl.stop()

	// Warmed up, 1,000 events a round, until the process has collected
	// four times (package warmup).
	if err := warmup.UntilCollected(4, 20, func(round int) error {
		_, err := throughput("ws_warm_"+strconv.Itoa(round), 1, 1000)
		return err
	}); err != nil {
		return err
	}
	logBefore, err := lastSeq(ctx, d.JS, events.WebhookAttemptsLogStream)
	if err != nil {
		return err
	}
	// One webhook: rounds of the dispatcher interleaved with rounds of the
	// floor, which goes first every other round.
	if err := mk("ws_one", 1); err != nil {
		return err
	}
	const rounds, perRound = 5, 4000
	var ones, floors, ratios []float64
	for round := range rounds {
		one := func() error {
			r, err := delivered(perRound, perRound, func(i int) (jetstream.PubAckFuture, error) {
				return publish("ws_one", round*perRound+i, 0)
			})
			ones = append(ones, r)
			return err
		}
		dispatched := one
		if round == 0 { // the profile, when asked for, is of the dispatcher's first round
			dispatched = func() error { return profiled(cpuProfile, one) }
		}
		bare := func() error {
			r, err := delivered(perRound, perRound, func(i int) (jetstream.PubAckFuture, error) { return fl.publish(body(i, 0)) })
			floors = append(floors, r)
			return err
		}
		order := []func() error{dispatched, bare}
		if round%2 == 1 {
			order = []func() error{bare, dispatched}
		}
		for _, f := range order {
			if err := f(); err != nil {
				return err
			}
			// What a round leaves behind (the durable log's writes of its
			// attempts) is not done on the next round's time.
			if err := logDrained(ctx, d.JS); err != nil {
				return err
			}
		}
		ratios = append(ratios, ones[round]/floors[round])
	}
	r1 := median(ones)
	met := map[bool]string{true: "MET", false: "NOT MET"}
	fmt.Printf("1 webhook:   %8.0f deliveries/s (median of %d rounds of %d events, %.0f to %.0f; goal >= 5,000 signed deliveries/s: %s)\n",
		r1, rounds, perRound, slices.Min(ones), slices.Max(ones), met[r1 >= 5000])
	fmt.Printf("             the floor, a bare pool that takes each event from a work queue, signs, posts and acks it: %.0f/s;\n", median(floors))
	fmt.Printf("             the dispatcher does %.3f of it (median of the rounds' ratios, %.3f to %.3f; stated, no goal)\n",
		median(ratios), slices.Min(ratios), slices.Max(ratios))
	if err := durableLogKeptUp(ctx, d.JS, svc.App.History.(*adapters.AttemptPages), "ws_one", rounds*perRound, logBefore); err != nil {
		return err
	}
	r10, err := throughput("ws_ten", 10, 500)
	if err != nil {
		return err
	}
	fmt.Printf("10 webhooks: %8.0f deliveries/s (500 events x 10 webhooks)\n", r10)

	// Latency at a steady 200 events/s for 10 s, one webhook.
	if err := mk("ws_lat", 1); err != nil {
		return err
	}
	rcv.mu.Lock()
	rcv.lat = nil
	rcv.mu.Unlock()
	const rate, secs = 200, 10
	before := rcv.count.Load()
	tick := time.NewTicker(time.Second / rate)
	for i := range rate * secs {
		<-tick.C
		if _, err := publish("ws_lat", i, time.Now().UnixNano()); err != nil {
			return err
		}
	}
	tick.Stop()
	deadline := time.Now().Add(30 * time.Second)
	for rcv.count.Load() < before+rate*secs && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	rcv.mu.Lock()
	lat := slices.Clone(rcv.lat)
	rcv.mu.Unlock()
	slices.Sort(lat)
	if len(lat) == 0 {
		return fmt.Errorf("no latency samples")
	}
	q := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	fmt.Printf("latency at %d events/s (%d deliveries): p50 %s  p95 %s  p99 %s\n", rate, len(lat),
		q(0.50).Round(100*time.Microsecond), q(0.95).Round(100*time.Microsecond), q(0.99).Round(100*time.Microsecond))
	fmt.Printf("goals: >= 1,000 deliveries/s: %v; p95 < 50ms: %v\n", min(r1, r10) >= 1000, q(0.95) < 50*time.Millisecond)
	return durableLogReads(ctx, store.URI)
}

// median is the middle of xs (the mean of the middle two of an even
// count).
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
