package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/llm/llmtest"
	"github.com/voiceai-platform/voiceai/services/allinone/internal/benchkit"
	"github.com/voiceai-platform/voiceai/services/allinone/internal/benchproc"
)

// Goals of (f), issue 42: a step of 500 simultaneous callers over two
// runner processes, each under 256 MiB resident, the platform's own
// overhead per turn at p95 under 2 ms.
const (
	loadRunnerRSSGoalKiB = 256 << 10
	loadOverheadGoalUs   = 2000
)

// loadStep is (f): a load test of one step of callers simultaneous
// callers (each playing turns agent turns) against the agent's own
// endpoint, streaming its answer (first chunk after 100 ms, then a word
// every 5 ms), over two runner processes of concurrency runs each.
func loadStep(bins map[string]string, dataDir string, callers, turns, concurrency int) error {
	endpoint := llmtest.NewServer(llmtest.Fixed(0, "We are open nine to five every weekday."))
	endpoint.SetRecording(false)
	endpoint.SetStream(&llmtest.Stream{First: 100 * time.Millisecond, Gap: 5 * time.Millisecond})
	defer endpoint.Close()
	shared := []string{"VOICEAI_SECRET_KEY=" + benchSecret, "VOICEAI_OUTBOUND_ALLOW_HOSTS=127.0.0.1",
		"VOICEAI_MAX_LOAD_CALLERS=" + strconv.Itoa(max(callers, 500))}
	p, err := startPlatform(bins, dataDir, shared...)
	if err != nil {
		return err
	}
	defer p.Stop()
	if err := p.customAgent(endpoint.URL); err != nil {
		return err
	}
	var runners []*benchproc.Proc
	for range 2 {
		r, err := startRunner(bins, p, concurrency, append(shared, "VOICEAI_LLM_PROVIDER=offline")...)
		if err != nil {
			return err
		}
		runners = append(runners, r)
		defer r.Stop()
	}
	var created struct {
		ID string `json:"id"`
	}
	if err := p.api.Call("POST", "/v1/convai/agent-testing/create", passingTest(0), &created); err != nil {
		return err
	}
	var lt struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Steps  []struct {
			Callers      int                            `json:"callers"`
			Turns        int64                          `json:"turns"`
			FailedTurns  int64                          `json:"failed_turns"`
			Failures     []struct{ Reason string }      `json:"failures"`
			FirstTokenMs *struct{ P50, P95, Max int64 } `json:"first_token_ms"`
			TurnMs       *struct{ P50, P95, Max int64 } `json:"turn_ms"`
			OverheadUs   *struct{ P50, P95 int64 }      `json:"overhead_us"`
			StartedAt    int64                          `json:"started_at_unix_ms"`
			FinishedAt   int64                          `json:"finished_at_unix_ms"`
		} `json:"steps"`
	}
	body := fmt.Sprintf(`{"test_id":%q,"steps":[%d],"turns_per_caller":%d}`, created.ID, callers, turns)
	if err := p.api.Call("POST", "/v1/convai/agents/"+p.agentID+"/load-tests", body, &lt); err != nil {
		return err
	}
	deadline := time.Now().Add(5 * time.Minute)
	for lt.Status == "running" {
		if time.Now().After(deadline) {
			return fmt.Errorf("(f) load test %s still running after 5 minutes", lt.ID)
		}
		time.Sleep(200 * time.Millisecond)
		if err := p.api.Call("GET", "/v1/convai/load-tests/"+lt.ID, "", &lt); err != nil {
			return err
		}
	}
	if lt.Status != "completed" || len(lt.Steps) != 1 {
		return fmt.Errorf("(f) load test %s ended %s", lt.ID, lt.Status)
	}
	st := lt.Steps[0]
	if st.FirstTokenMs == nil || st.OverheadUs == nil {
		reasons := make([]string, len(st.Failures))
		for i, f := range st.Failures {
			reasons[i] = f.Reason
		}
		return fmt.Errorf("(f) no turn was answered: %s", strings.Join(reasons, "; "))
	}
	byWorker, err := p.loadJobsByWorker(lt.ID)
	if err != nil {
		return err
	}
	fmt.Printf("(f) load step: %d simultaneous callers x %d turn(s), 2 runner processes x %d slots, endpoint first chunk at 100 ms: "+
		"%d turns (%d failed) in %s; first token p50 %d / p95 %d ms, turn p50 %d / p95 %d ms; jobs per runner %s\n",
		callers, turns, concurrency, st.Turns, st.FailedTurns, time.Duration(st.FinishedAt-st.StartedAt)*time.Millisecond,
		st.FirstTokenMs.P50, st.FirstTokenMs.P95, st.TurnMs.P50, st.TurnMs.P95, byWorker)
	fmt.Printf("(f) platform overhead per turn: p50 %d µs, p95 %d µs (goal < %d µs at p95) %s\n",
		st.OverheadUs.P50, st.OverheadUs.P95, loadOverheadGoalUs, benchkit.Verdict(st.OverheadUs.P95 < loadOverheadGoalUs))
	worst := int64(0)
	for i, r := range runners {
		kb := r.PeakRSSKiB()
		worst = max(worst, kb)
		fmt.Printf("(f) peak resident memory, runner %d: %.0f MiB\n", i+1, float64(kb)/1024)
	}
	fmt.Printf("(f) every runner under 256 MiB resident, no turn failed: %s\n",
		benchkit.Verdict(worst < loadRunnerRSSGoalKiB && st.FailedTurns == 0))
	return nil
}

// loadJobsByWorker reads the step's stored samples and counts the jobs
// each runner played, e.g. "wrk_a: 6, wrk_b: 4".
func (p *platform) loadJobsByWorker(id string) (string, error) {
	js, closeJS, err := p.JetStream()
	if err != nil {
		return "", err
	}
	defer closeJS()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := js.OrderedConsumer(ctx, "TESTRUNS", jetstream.OrderedConsumerConfig{FilterSubjects: []string{"testruns.load.*." + id + ".>"}})
	if err != nil {
		return "", err
	}
	info, err := c.Info(ctx)
	if err != nil {
		return "", err
	}
	counts := map[string]int{}
	for n := info.NumPending; n > 0; n-- {
		m, err := c.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			return "", err
		}
		var ev testingv1.LoadSamplesRecorded
		if err := proto.Unmarshal(m.Data(), &ev); err != nil {
			return "", err
		}
		counts[ev.GetSamples().GetWorkerId()]++
	}
	if len(counts) == 0 {
		return "", errors.New("(f) no samples stored")
	}
	var parts []string
	for w, n := range counts {
		parts = append(parts, fmt.Sprintf("%s: %d", w, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", "), nil
}
