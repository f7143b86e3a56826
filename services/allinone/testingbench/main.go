// Command testingbench measures agent testing end to end, in one run on
// this machine, with separate processes as in production: the platform
// (allinone, embedded NATS and store, no in-process runners) and
// testing-runner workers.
//
//	(a) orchestration ceiling: runs/s end to end with the offline model,
//	    against raw JetStream work-queue publish-and-ack throughput;
//	(b) scaling: runs/s for one and for two runner processes at the same
//	    concurrency, the agent played by its own endpoint (custom-llm)
//	    streaming its first word at 50 ms, judged by a model answering in
//	    50 ms; and the time to first token and whole turn the runs
//	    recorded against what the endpoint did;
//	(c) a 5,000 tests x 50 repeats (250,000 runs) invocation: time to
//	    complete, peak resident memory of every process, and the time and
//	    peak memory of one GET of it;
//	(e) fairness: while (c) runs, another workspace's one-run invocation
//	    (every few seconds, up to 5 times): its time from run-tests to
//	    completed, against a few seconds;
//	(d) ticketing keeps up: an invocation whose every run fails, run
//	    with no QA worker (runs/s of the runners), then a tickets-qa-worker
//	    process turns the failed runs into tickets (failed runs/s);
//	(f) a load test's step of 500 simultaneous callers over two runner
//	    processes: each runner's peak resident memory (goal < 256 MiB) and
//	    the platform's own overhead per turn (goal < 2 ms at p95).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/embedded"
	"github.com/voiceai-platform/voiceai/pkg/llm/llmtest"
	"github.com/voiceai-platform/voiceai/pkg/wire"
	"github.com/voiceai-platform/voiceai/services/allinone/internal/benchkit"
	"github.com/voiceai-platform/voiceai/services/allinone/internal/benchproc"
	ticketsadapters "github.com/voiceai-platform/voiceai/services/tickets/adapters"
)

const adminKey = "vak_testingbench_admin_key_0123456789"

// benchSecret is the deployment secret of the scaling measurement: the
// platform seals the workspace secret with it, the runners open it.
const benchSecret = "5f1c0d2e9a7b4c3f8e6d1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d"

// profileDir, when set, gives every process a profiler endpoint.
var profileDir string

// largeOnly skips (a), (b), (d) and (f); loadOnly runs (f) alone.
var largeOnly, loadOnly bool

func main() {
	tests := flag.Int("tests", 5000, "tests in the large invocation (c)")
	qaTests := flag.Int("qa-tests", 2000, "failing tests of (d), each run 10 times")
	repeat := flag.Int("repeat", 50, "repeat_count of the large invocation (c)")
	concurrency := flag.Int("concurrency", 16, "runs in flight per runner process")
	scaleRuns := flag.Int("scale-runs", 1600, "runs per measurement of (b)")
	flag.StringVar(&profileDir, "profile", "", "write 10 s CPU profiles of every process during (c), and one of the QA worker's first 2 s in (d), into this directory")
	flag.BoolVar(&largeOnly, "large-only", false, "measure only (c) and (e), e.g. with -tests 200 for a short run")
	flag.BoolVar(&loadOnly, "load-only", false, "measure only (f), the load step")
	flag.IntVar(&loadCallers, "load-callers", 500, "simultaneous callers of the load step (f)")
	flag.IntVar(&loadTurns, "load-turns", 2, "agent turns each caller of (f) plays")
	flag.IntVar(&loadConcurrency, "load-concurrency", 5, "runner slots per process in (f): 5 makes the 10 jobs of 500 callers spread 5 and 5")
	flag.Parse()
	if err := run(*tests, *repeat, *concurrency, *scaleRuns, *qaTests); err != nil {
		fmt.Fprintln(os.Stderr, "testingbench:", err)
		os.Exit(1)
	}
}

func run(tests, repeat, concurrency, scaleRuns, qaTests int) error {
	dir, err := os.MkdirTemp("", "voiceai-testingbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Println("building binaries...")
	bins, err := benchproc.Build(dir, "./services/allinone", "./services/testing/cmd/testing-runner", "./services/tickets/cmd/tickets-qa-worker")
	if err != nil {
		return err
	}

	if largeOnly {
		return large(bins, dir, tests, repeat, concurrency, 0)
	}
	if loadOnly {
		return loadStep(bins, filepath.Join(dir, "load"), loadCallers, loadTurns, loadConcurrency)
	}
	raw, err := rawWorkQueueRate(filepath.Join(dir, "raw"), 50_000)
	if err != nil {
		return fmt.Errorf("raw baseline: %w", err)
	}
	fmt.Printf("raw JetStream work queue: %.0f msgs/s (publish and ack, 50,000 messages)\n", raw)

	// (b) scaling: the agent is played by its own endpoint (custom-llm,
	// its key a workspace secret) streaming as the ElevenLabs guide's
	// example does, its first word 50 ms after the request and one more
	// every 2 ms; the judge is the platform's model answering in 50 ms.
	const firstToken, gap = 50 * time.Millisecond, 2 * time.Millisecond
	endpoint := llmtest.NewServer(llmtest.Fixed(0, "We are open nine to five."))
	endpoint.SetStream(&llmtest.Stream{First: firstToken, Gap: gap, NoRoleChunk: true})
	// Its six words, the finish and the usage chunks, then [DONE].
	streamEnd := firstToken + 8*gap
	endpoint.SetRecording(false)
	defer endpoint.Close()
	judge := llmtest.NewServer(llmtest.Fixed(50*time.Millisecond, `{"result":"success","rationale":["ok"],"summary":"ok"}`))
	judge.SetRecording(false)
	defer judge.Close()
	shared := []string{"VOICEAI_SECRET_KEY=" + benchSecret, "VOICEAI_OUTBOUND_ALLOW_HOSTS=127.0.0.1"}
	p, err := startPlatform(bins, filepath.Join(dir, "scale"), shared...)
	if err != nil {
		return err
	}
	if err := p.customAgent(endpoint.URL); err != nil {
		return err
	}
	rates := make([]float64, 2)
	for workers := 1; workers <= 2; workers++ {
		var procs []*benchproc.Proc
		for range workers {
			r, err := startRunner(bins, p, concurrency, append(shared, "VOICEAI_LLM_PROVIDER=openai", "VOICEAI_LLM_BASE_URL="+judge.URL,
				"VOICEAI_LLM_MODEL=bench-judge", "VOICEAI_AGENT_ENDPOINT_CONCURRENCY="+strconv.Itoa(concurrency))...)
			if err != nil {
				return err
			}
			procs = append(procs, r)
		}
		testsN := scaleRuns / 10
		rate, _, err := p.invoke(testsN, 10, false)
		for _, r := range procs {
			r.Stop()
		}
		if err != nil {
			return err
		}
		rates[workers-1] = rate
		fmt.Printf("(b) %d runner process(es) x %d concurrent runs, streaming agent endpoint (first token at 50 ms) and 50 ms judge: %.1f runs/s (%d runs)\n",
			workers, concurrency, rate, testsN*10)
	}
	fmt.Printf("(b) scaling: two processes reach %.3fx one (goal >= 1.8) %s\n", rates[1]/rates[0], benchkit.Verdict(rates[1]/rates[0] >= 1.8))
	var inv struct {
		Latency wire.AgentLatency `json:"agent_latency"`
	}
	if err := p.api.Call("GET", "/v1/convai/test-invocations/"+p.invID, "", &inv); err != nil {
		return err
	}
	if inv.Latency.P50Ms == nil || inv.Latency.FirstTokenP50Ms == nil {
		return errors.New("(b) the invocation recorded no agent latency")
	}
	off := *inv.Latency.FirstTokenP50Ms - firstToken.Milliseconds()
	fmt.Printf("(b) recorded time to first token over %d turns: p50 %d ms, p95 %d ms, against the endpoint's %d ms: p50 off by %d ms (goal within 5) %s\n",
		inv.Latency.Turns, *inv.Latency.FirstTokenP50Ms, *inv.Latency.FirstTokenP95Ms, firstToken.Milliseconds(), off, benchkit.Verdict(off >= -5 && off <= 5))
	off = *inv.Latency.P50Ms - streamEnd.Milliseconds()
	fmt.Printf("(b) recorded whole turn: p50 %d ms, p95 %d ms, against the stream's end at %d ms: p50 off by %d ms (goal within 5) %s\n",
		*inv.Latency.P50Ms, *inv.Latency.P95Ms, streamEnd.Milliseconds(), off, benchkit.Verdict(off >= -5 && off <= 5))
	p.Stop()
	if err := large(bins, dir, tests, repeat, concurrency, raw); err != nil {
		return err
	}
	if err := qaKeepsUp(bins, filepath.Join(dir, "qa"), qaTests, concurrency); err != nil {
		return err
	}
	return loadStep(bins, filepath.Join(dir, "load"), loadCallers, loadTurns, loadConcurrency)
}

// loadCallers, loadTurns and loadConcurrency shape (f).
var loadCallers, loadTurns, loadConcurrency int

// large is (a), (c) and (e): the large invocation with the offline model,
// and another workspace's one-run invocations beside it; (a) only when
// the raw work queue's rate is known.
func large(bins map[string]string, dir string, tests, repeat, concurrency int, raw float64) error {
	p, err := startPlatform(bins, filepath.Join(dir, "large"))
	if err != nil {
		return err
	}
	defer p.Stop()
	var runners []*benchproc.Proc
	for range 2 {
		r, err := startRunner(bins, p, concurrency, "VOICEAI_LLM_PROVIDER=offline")
		if err != nil {
			return err
		}
		runners = append(runners, r)
		defer r.Stop()
	}
	p.started = make(chan struct{})
	if profileDir != "" {
		go profile(p.started, map[string]*benchproc.Proc{"platform": p.Proc, "runner1": runners[0], "runner2": runners[1]})
	}
	other, err := p.newOtherWorkspace()
	if err != nil {
		return fmt.Errorf("(e) another workspace: %w", err)
	}
	done := make(chan struct{})
	type samples struct {
		took []time.Duration
		err  error
	}
	fair := make(chan samples, 1)
	go func() {
		took, err := other.fairness(p.started, done, 5)
		fair <- samples{took, err}
	}()
	rate, elapsed, err := p.invoke(tests, repeat, true)
	close(done)
	if err != nil {
		return err
	}
	total := tests * repeat
	fmt.Printf("(c) %d tests x %d repeats = %d runs completed in %s (2 runner processes x %d)\n", tests, repeat, total, elapsed.Round(time.Millisecond), concurrency)
	if raw > 0 {
		fmt.Printf("(a) orchestration ceiling: %.0f runs/s end to end (offline model) vs %.0f raw work-queue msgs/s = %.3f of raw (goal >= 0.25) %s\n",
			rate, raw, rate/raw, benchkit.Verdict(rate/raw >= 0.25))
	}
	f := <-fair
	if f.err != nil {
		return fmt.Errorf("(e) fairness: %w", f.err)
	}
	reportFairness(f.took, total)
	peak := func(name string, pr *benchproc.Proc) int64 {
		kb := pr.PeakRSSKiB()
		fmt.Printf("(c) peak resident memory, %s: %.0f MiB\n", name, float64(kb)/1024)
		return kb
	}
	worst := peak("platform (gateway + services + NATS + store)", p.Proc)
	for i, r := range runners {
		worst = max(worst, peak(fmt.Sprintf("runner %d", i+1), r))
	}
	p.ResetPeakRSS()
	getTime, size, err := p.getInvocation()
	if err != nil {
		return fmt.Errorf("%w\nthe platform's warnings and errors:\n%s", err, p.Logs())
	}
	getPeak := p.PeakRSSKiB()
	fmt.Printf("(c) one GET of the invocation: %s, %.0f MiB of JSON streamed; platform peak resident memory during it %.0f MiB\n",
		getTime.Round(time.Millisecond), float64(size)/(1<<20), float64(getPeak)/1024)
	fmt.Printf("(c) every process under 1 GiB resident: %s\n", benchkit.Verdict(max(worst, getPeak) < 1<<20))
	p.Stop()
	for _, r := range runners {
		r.Stop()
	}
	return nil
}

// qaKeepsUp is (d): the runners' rate on an invocation whose every run
// fails, with no QA worker running, against one tickets-qa-worker
// process's rate on the backlog of failed runs it leaves.
func qaKeepsUp(bins map[string]string, dataDir string, tests, concurrency int) error {
	const repeat = 10
	p, err := startPlatform(bins, dataDir, "VOICEAI_EMBEDDED_QA_WORKERS=0")
	if err != nil {
		return err
	}
	defer p.Stop()
	for range 2 {
		r, err := startRunner(bins, p, concurrency, "VOICEAI_LLM_PROVIDER=offline")
		if err != nil {
			return err
		}
		defer r.Stop()
	}
	p.testBody = failingTest
	runRate, _, err := p.invoke(tests, repeat, false)
	if err != nil {
		return err
	}
	started := time.Now()
	w, err := start(bins["tickets-qa-worker"], []string{"VOICEAI_NATS_URL=" + p.NATSURL, "VOICEAI_LOG_LEVEL=warn"})
	if err != nil {
		return err
	}
	defer w.Stop()
	if profileDir != "" {
		profiled := make(chan struct{})
		defer func() { <-profiled }() // before the worker stops
		go func() {
			defer close(profiled)
			if err := w.ProfileWhenUp(2*time.Second, filepath.Join(profileDir, "qaworker.pprof")); err != nil {
				fmt.Fprintln(os.Stderr, "profile qaworker", err)
			}
		}()
	}
	acked, pulling, drained, err := p.waitQADrained(2 * time.Minute)
	if err != nil {
		return err
	}
	// Throughput from the worker's first pull (the runners' rate is
	// measured warm too); its start-up is reported on its own.
	startup := pulling.Sub(started)
	qaRate := float64(acked) / time.Since(pulling).Seconds()
	// The listing follows the stream the worker appends to: a ticket
	// acknowledged a moment ago may not be listed yet. A lost one never is.
	var n int
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if n, err = p.countTickets("label=test-failure"); err != nil {
			return err
		}
		if n >= tests || time.Now().After(deadline) {
			break
		}
	}
	state := "drained"
	if !drained {
		state = fmt.Sprintf("NOT drained in 2m: %d of %d runs handled", acked, tests*repeat)
	}
	fmt.Printf("(d) every run fails, %d tests x %d: runners %.0f runs/s; one QA worker %.0f failed runs/s (%s; pulling %s after its start) -> %d tickets (want %d) = %.3fx the runners (goal >= 1) %s\n",
		tests, repeat, runRate, qaRate, state, startup.Round(time.Millisecond), n, tests, qaRate/runRate, benchkit.Verdict(drained && qaRate >= runRate && n == tests))
	return nil
}

// failingTest is a test the offline model fails: nothing in the bench
// agent's prompt covers it.
func failingTest(i int) string {
	return fmt.Sprintf(`{"type":"llm","name":"vouchers %d",
	  "chat_history":[{"role":"user","message":"Do you sell gift vouchers?","time_in_call_secs":1}],
	  "success_condition":"The agent explains how to buy a gift voucher and what it costs"}`, i)
}

// waitQADrained waits until the QA worker's runs consumer has every run
// result of the stream acknowledged, or limit passes; it returns how many
// it had acknowledged and when it was first seen pulling (the consumer
// is the worker's own: nothing pulled from it before).
func (p *platform) waitQADrained(limit time.Duration) (acked uint64, pulling time.Time, drained bool, err error) {
	js, closeJS, err := p.JetStream()
	if err != nil {
		return 0, pulling, false, err
	}
	defer closeJS()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	for {
		if c, err := js.Consumer(ctx, "TESTRUNS", ticketsadapters.QARunsDurable); err == nil {
			if info, err := c.Info(ctx); err == nil {
				acked = info.AckFloor.Consumer
				if pulling.IsZero() && info.Delivered.Stream > 0 {
					pulling = time.Now()
				}
				if info.NumPending == 0 && info.NumAckPending == 0 && info.Delivered.Stream > 0 {
					return acked, pulling, true, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			if pulling.IsZero() {
				pulling = time.Now()
			}
			return acked, pulling, false, nil
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// countTickets counts the workspace's tickets matching query, page by page.
func (p *platform) countTickets(query string) (int, error) {
	n, cursor := 0, ""
	for {
		var page struct {
			Tickets    []json.RawMessage `json:"agent_conversation_tickets"`
			NextCursor *string           `json:"next_cursor"`
			HasMore    bool              `json:"has_more"`
		}
		path := "/v1/convai/triage-tickets?page_size=100&" + query
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		if err := p.api.Call("GET", path, "", &page); err != nil {
			return 0, err
		}
		n += len(page.Tickets)
		if !page.HasMore || page.NextCursor == nil {
			return n, nil
		}
		cursor = *page.NextCursor
	}
}

// rawWorkQueueRate publishes n small messages to a work-queue stream of
// a fresh embedded server and consumes and acks them all.
func rawWorkQueueRate(dir string, n int) (float64, error) {
	ns, err := embedded.StartNATS(embedded.NATSOptions{StoreDir: dir, Port: -1})
	if err != nil {
		return 0, err
	}
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "RAW", Subjects: []string{"raw.>"}, Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage}); err != nil {
		return 0, err
	}
	cons, err := js.CreateConsumer(ctx, "RAW", jetstream.ConsumerConfig{Durable: "w", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 100_000})
	if err != nil {
		return 0, err
	}
	payload := bytes.Repeat([]byte("x"), 100)
	start := time.Now()
	for i := range n {
		if _, err := js.PublishAsync("raw.job."+strconv.Itoa(i%1000), payload, jetstream.WithStallWait(time.Minute)); err != nil {
			return 0, err
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		return 0, errors.New("publish did not complete")
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(1000))
	if err != nil {
		return 0, err
	}
	defer it.Stop()
	for range n {
		m, err := it.Next()
		if err != nil {
			return 0, err
		}
		if err := m.Ack(); err != nil {
			return 0, err
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

type platform struct {
	*benchproc.Platform
	api     *benchkit.Client
	agentID string
	invID   string
	started chan struct{} // closed when the invocation is accepted, if set
	// testBody is the i-th test created by invoke (default: one the
	// offline model passes).
	testBody func(i int) string
}

// start runs bin, with a profiler endpoint when profiling.
func start(bin string, env []string) (*benchproc.Proc, error) {
	metrics, err := benchproc.MetricsAddr(profileDir != "")
	if err != nil {
		return nil, err
	}
	return benchproc.Start(bin, env, metrics)
}

func startPlatform(bins map[string]string, dataDir string, env ...string) (*platform, error) {
	metrics, err := benchproc.MetricsAddr(profileDir != "")
	if err != nil {
		return nil, err
	}
	bp, err := benchproc.StartPlatform(bins["allinone"], dataDir, adminKey, metrics, 2*time.Minute,
		append([]string{"VOICEAI_MAX_BODY_BYTES=8388608", "VOICEAI_UPSTREAM_TIMEOUT=120s"}, env...)...)
	if err != nil {
		return nil, err
	}
	p := &platform{Platform: bp, api: benchkit.NewClient(bp.Base, adminKey, 16)}
	p.agentID, err = p.api.CreateAgent(`{"name":"bench","conversation_config":{"agent":{"first_message":"Hello!",
	  "prompt":{"prompt":"Our opening hours are nine to five every weekday. Bookings can be changed until noon."}}}}`, "")
	if err != nil {
		return nil, err
	}
	return p, nil
}

// customAgent makes the agent under test one whose turns its own endpoint
// at url plays, with its key a workspace secret.
func (p *platform) customAgent(url string) error {
	var secret struct {
		SecretID string `json:"secret_id"`
	}
	if err := p.api.Call("POST", "/v1/convai/secrets", `{"name":"bench endpoint key","value":"sk-bench"}`, &secret); err != nil {
		return err
	}
	id, err := p.api.CreateAgent(`{"name":"bench custom","conversation_config":{"agent":{"first_message":"Hello!",
	  "prompt":{"prompt":"Our opening hours are nine to five every weekday.","llm":"custom-llm",
	    "custom_llm":{"url":"`+url+`","model_id":"bench-agent","api_key":{"secret_id":"`+secret.SecretID+`"}}}}}}`, "")
	if err != nil {
		return err
	}
	p.agentID = id
	return nil
}

func startRunner(bins map[string]string, p *platform, concurrency int, env ...string) (*benchproc.Proc, error) {
	env = append(env, "VOICEAI_NATS_URL="+p.NATSURL, "VOICEAI_LOG_LEVEL=warn",
		"VOICEAI_RUNNER_CONCURRENCY="+strconv.Itoa(concurrency))
	return start(bins["testing-runner"], env)
}

// invoke creates tests, runs them repeat times and waits for completion;
// it returns runs per second from the run-tests request to completion.
func (p *platform) invoke(tests, repeat int, progress bool) (float64, time.Duration, error) {
	ids := make([]string, tests)
	createStart := time.Now()
	sem := make(chan struct{}, 8)
	errs := make(chan error, tests)
	for i := range tests {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			var created struct {
				ID string `json:"id"`
			}
			body := passingTest
			if p.testBody != nil {
				body = p.testBody
			}
			err := p.api.Call("POST", "/v1/convai/agent-testing/create", body(i), &created)
			ids[i] = created.ID
			errs <- err
		}()
	}
	for range tests {
		if err := <-errs; err != nil {
			return 0, 0, err
		}
	}
	if progress {
		fmt.Printf("    created %d tests in %s (8 at a time)\n", tests, time.Since(createStart).Round(time.Millisecond))
	}
	refs := make([]string, tests)
	for i, id := range ids {
		refs[i] = `{"test_id":"` + id + `"}`
	}
	body := `{"tests":[` + strings.Join(refs, ",") + `],"repeat_count":` + strconv.Itoa(repeat) + `}`
	started := time.Now()
	resp, err := p.api.Send("POST", "/v1/convai/agents/"+p.agentID+"/run-tests", body, "")
	if err != nil {
		return 0, 0, err
	}
	// The answer lists every run, pending: read only the id at its head.
	head := make([]byte, 4096)
	n, _ := io.ReadAtLeast(resp.Body, head, 200)
	go func() { _, _ = io.Copy(io.Discard, resp.Body); resp.Body.Close() }()
	if resp.StatusCode != 200 {
		return 0, 0, fmt.Errorf("run-tests: %d %s", resp.StatusCode, head[:n])
	}
	i := bytes.Index(head[:n], []byte(`"id":"`))
	if i < 0 {
		return 0, 0, fmt.Errorf("run-tests answer: %.200s", head[:n])
	}
	invID := string(head[i+6 : i+6+bytes.IndexByte(head[i+6:n], '"')])
	p.invID = invID
	if p.started != nil {
		close(p.started)
	}
	var last time.Time
	for {
		var page struct {
			Results []struct {
				ID      string `json:"id"`
				Status  string `json:"status"`
				Pending int    `json:"pending_count"`
			} `json:"results"`
		}
		if err := p.api.Call("GET", "/v1/convai/test-invocations?page_size=1&agent_id="+p.agentID, "", &page); err != nil {
			return 0, 0, err
		}
		if len(page.Results) > 0 && page.Results[0].ID == invID && page.Results[0].Status == "completed" {
			break
		}
		if progress && time.Since(last) > 2*time.Second && len(page.Results) > 0 {
			fmt.Printf("    ... %d runs pending after %s\n", page.Results[0].Pending, time.Since(started).Round(100*time.Millisecond))
			last = time.Now()
		}
		time.Sleep(50 * time.Millisecond)
	}
	elapsed := time.Since(started)
	return float64(tests*repeat) / elapsed.Seconds(), elapsed, nil
}

// passingTest is a test the offline model passes.
func passingTest(i int) string {
	return fmt.Sprintf(`{"type":"llm","name":"hours %d",
	  "chat_history":[{"role":"user","message":"What are your opening hours?","time_in_call_secs":1}],
	  "success_examples":[{"response":"We are open nine to five every weekday.","type":"success"}],
	  "failure_examples":[{"response":"I do not know.","type":"failure"}]}`, i)
}

// profile writes a CPU profile of each process, taken during the first
// 10 s of the large invocation's runs.
func profile(started <-chan struct{}, procs map[string]*benchproc.Proc) {
	<-started
	for name, pr := range procs {
		go func() {
			if err := pr.Profile(10*time.Second, filepath.Join(profileDir, name+".pprof")); err != nil {
				fmt.Fprintln(os.Stderr, "profile", name, err)
			}
		}()
	}
}

func (p *platform) getInvocation() (time.Duration, int64, error) {
	started := time.Now()
	resp, err := p.api.Send("GET", "/v1/convai/test-invocations/"+p.invID, "", "")
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil || resp.StatusCode != 200 {
		return 0, 0, fmt.Errorf("get invocation: %d after %d bytes: %v", resp.StatusCode, n, err)
	}
	return time.Since(started), n, nil
}
