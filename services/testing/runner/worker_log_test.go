package runner_test

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/obs"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/testing/adapters"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
	"github.com/voiceai-platform/voiceai/services/testing/runner"
)

// logSink is a log the test reads while the worker writes.
type logSink struct{ testkit.LogBuffer }

// lines are the JSON lines logged so far whose msg starts with prefix.
func (s *logSink) lines(t *testing.T, prefix string) []map[string]any {
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.String()), "\n") {
		var line map[string]any
		if l == "" {
			continue
		}
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if msg, _ := line["msg"].(string); strings.HasPrefix(msg, prefix) {
			out = append(out, line)
		}
	}
	return out
}

// What the runner logs about a job names the trace of the request that
// invoked it: the traceparent the job message carries.
func TestJobLogLinesNameTheJobsTrace(t *testing.T) {
	ctx, js := testingStreams(t)
	logs := &logSink{}
	log := obs.NewLogger(logs, slog.LevelInfo, "testing-runner")
	_, stop := startWorker(ctx, t, js, app.New(adapters.JetStreamPorts(js, log, nil), nil, log, time.Now), log, func(w *runner.Worker) {
		w.Concurrency, w.MaxAttempts = 1, 2
	})

	// A job of an invocation that does not exist fails, then is given up.
	const ws, inv, traceID = "ws_1", "tinv_missing", "4bf92f3577b34da6a3ce929d0e0e4736"
	runID := domain.RunID(inv, 0)
	msg := nats.NewMsg(must(events.TestJobSubject(ws, inv, runID)))
	msg.Data, _ = proto.Marshal(&testingv1.RunJob{WorkspaceId: ws, InvocationId: inv, Kind: "run", RunId: runID, Attempt: 1})
	msg.Header.Set(events.HeaderTraceparent, "00-"+traceID+"-00f067aa0ba902b7-01")
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, "the job given up", func() bool { return len(logs.lines(t, "runner: job given up")) > 0 })
	stop()
	failed, gaveUp := logs.lines(t, "runner: job failed"), logs.lines(t, "runner: job given up")
	if len(failed) == 0 {
		t.Fatal("no line says the job failed")
	}
	for _, line := range append(failed, gaveUp...) {
		if line["trace_id"] != traceID || line["span_id"] == "" || line["span_id"] == nil {
			t.Errorf("line %q names trace %v (span %v), want %s", line["msg"], line["trace_id"], line["span_id"], traceID)
		}
	}
}
