package runner_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/embedded"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/services/testing/adapters"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
	"github.com/voiceai-platform/voiceai/services/testing/runner"
)

// An agent endpoint answering a megabyte a turn (within its answer
// bound) makes a result larger than the event log takes (8 MiB, and a "<"
// was 6 bytes of JSON): its run is stored once, cut to fit and saying so.
// Before, publishing it failed, the worker took that for a passing
// failure, and each redelivery ran the run again (the endpoint and the
// judge called anew) until it was given up as "started 3 times".
func TestARunWhoseAgentAnswersMegabytesIsStoredOnce(t *testing.T) {
	var calls atomic.Int32
	chunk := strings.Repeat("<", 16<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i < 63; i++ { // 1008 KiB: within the 1 MiB answer bound
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", chunk)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()

	ns := testenv.StartNATSWith(t, embedded.NATSOptions{MaxPayload: 8 << 20}) // deploy/'s max_payload
	js := testenv.JetStreamAt(t, ns.ClientURL())
	ctx := t.Context()
	if err := adapters.EnsureStreams(ctx, js, 1); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	cfg := `{"agent":{"first_message":"Hi","prompt":{"prompt":"p","llm":"custom-llm","custom_llm":{"url":"` + srv.URL + `","model_id":"team"}}}}`
	a, inv := storedInvocation(ctx, t, js, log, `{"type":"simulation","name":"sim","simulation_scenario":"Ask about the hours, then refunds, then parking.",
	  "success_condition":"answers","simulation_max_turns":2}`, func(ws string, test *testingv1.PlannedTest) *testingv1.Invocation {
		return &testingv1.Invocation{InvocationId: "tinv_big", WorkspaceId: ws, AgentId: "agent_1", RepeatCount: 1, JobsTotal: 1,
			Status: domain.InvocationRunning, AgentConfigJson: []byte(cfg), Tests: []*testingv1.PlannedTest{test}}
	})
	ws := inv.GetWorkspaceId()
	queueFirstRunJob(ctx, t, js, inv, 0)
	runID := domain.RunID(inv.InvocationId, 0)
	startWorker(ctx, t, js, a, log, func(w *runner.Worker) {
		w.MaxAttempts = 3
		playAgentsLocally(w)
	})
	results, err := js.OrderedConsumer(ctx, events.TestRunsStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{must(events.RunSubject(ws, inv.InvocationId, runID))}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := results.Next(jetstream.FetchMaxWait(60 * time.Second))
	if err != nil {
		t.Fatalf("no result: %v (agent endpoint called %d times)", err, calls.Load())
	}
	run := eventOf(t, m).(*testingv1.RunCompleted).GetRun()
	if n := calls.Load(); n != 2 || run.GetAttempt() != 1 || strings.Contains(run.GetError(), "started") {
		t.Fatalf("stored: attempt %d, status %q, error %q; the endpoint called %d times; want the first attempt's result, 2 calls",
			run.GetAttempt(), run.GetStatus(), run.GetError(), n)
	}
	if size := proto.Size(run); size > domain.MaxRunResultBytes {
		t.Fatalf("a result of %d bytes stored; want at most %d", size, domain.MaxRunResultBytes)
	}
	if !strings.Contains(string(run.GetAgentResponsesJson()), "bytes cut: a run's result is bounded") {
		t.Fatalf("the transcript does not say it was cut: %.300s", run.GetAgentResponsesJson())
	}
}
