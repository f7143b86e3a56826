package runner_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
	"github.com/voiceai-platform/voiceai/services/testing/runner"
)

// A job that fails on every delivery is not left on the work queue for
// ever: after MaxAttempts deliveries its run is recorded failed, with the
// reason, and the job leaves the queue.
func TestJobGivenUpAfterMaxAttempts(t *testing.T) {
	nc, err := nats.Connect(testenv.StartNATS(t))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := app.EnsureStreams(ctx, js, 1); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	w := &runner.Worker{App: app.New(js, nil, log), Exec: &runner.Executor{Model: runner.Offline{}}, Concurrency: 2,
		Log: log, MaxAttempts: 3, RetryDelay: 10 * time.Millisecond}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()

	// A job of an invocation that does not exist fails on every delivery.
	const ws, inv = "ws_1", "tinv_missing"
	runID := domain.RunID(inv, 0)
	data, _ := proto.Marshal(&testingv1.RunJob{WorkspaceId: ws, InvocationId: inv, Kind: "run", RunId: runID, Attempt: 1})
	if _, err := js.Publish(ctx, events.TestJobSubject(ws, inv, runID), data); err != nil {
		t.Fatal(err)
	}
	subject, _ := events.RunSubject(ws, inv, runID)
	results, err := js.OrderedConsumer(ctx, events.TestRunsStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := results.Next(jetstream.FetchMaxWait(20 * time.Second))
	if err != nil {
		t.Fatalf("no result recorded for a job failing on every delivery: %v", err)
	}
	rec, err := eventstore.RecordFromMsg(m)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := esproto.Decode(rec)
	if err != nil {
		t.Fatal(err)
	}
	run := msg.(*testingv1.RunCompleted).GetRun()
	if run.GetStatus() != domain.RunFailed || !strings.Contains(run.GetError(), "started 3 times") {
		t.Fatalf("given-up run: status %q, error %q", run.GetStatus(), run.GetError())
	}
	// The job leaves the queue once its result is stored.
	str, _ := js.Stream(ctx, events.TestJobsStream)
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := str.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Msgs == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d jobs still queued", info.State.Msgs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
