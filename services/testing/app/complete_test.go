package app

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// Outcomes are counted over each run's newest result, from the results'
// headers, or from the result itself when it has none.
func TestCountOutcomes(t *testing.T) {
	nc, err := nats.Connect(testenv.StartNATS(t))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	if err := EnsureStreams(ctx, js, 1); err != nil {
		t.Fatal(err)
	}
	a := New(js, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	inv := &testingv1.Invocation{InvocationId: "tinv_c", WorkspaceId: "ws", RepeatCount: 4,
		Tests: []*testingv1.PlannedTest{{TestId: "test_1"}},
		// Run 3 was resubmitted: only its second attempt counts.
		Resubmissions: []*testingv1.Resubmission{{Attempt: 2, RunIds: []string{domain.RunID("tinv_c", 3)}}}}
	store := func(idx int, attempt int32, status string, headers bool) {
		t.Helper()
		run := &testingv1.RunResult{RunId: domain.RunID("tinv_c", idx), InvocationId: "tinv_c", WorkspaceId: "ws", Attempt: attempt, Status: status}
		subject, _ := events.RunSubject("ws", "tinv_c", run.RunId)
		meta := &commonv1.EventMeta{EventId: "evt_" + strconv.Itoa(idx) + "_" + strconv.Itoa(int(attempt)), WorkspaceId: "ws"}
		msg, err := eventstore.NewEventMsg(ctx, subject, meta, &testingv1.RunCompleted{Meta: meta, Run: run})
		if err != nil {
			t.Fatal(err)
		}
		if headers {
			msg.Header.Set(events.HeaderRunStatus, status)
			msg.Header.Set(events.HeaderRunAttempt, strconv.Itoa(int(attempt)))
		}
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	store(0, 1, domain.RunPassed, true)
	store(1, 1, domain.RunFailed, false) // stored without the headers
	store(2, 1, domain.RunPassed, false)
	store(3, 1, domain.RunPassed, true) // superseded by its resubmission...
	store(3, 2, domain.RunFailed, true) // ...which failed
	passed, failed, err := a.countOutcomes(ctx, inv)
	if err != nil {
		t.Fatal(err)
	}
	if passed != 2 || failed != 2 {
		t.Fatalf("passed %d, failed %d; want 2 and 2", passed, failed)
	}
	// Before the resubmission's result is stored, the run is not counted.
	inv.Resubmissions = append(inv.Resubmissions, &testingv1.Resubmission{Attempt: 3, RunIds: []string{domain.RunID("tinv_c", 0)}})
	if passed, failed, _ = a.countOutcomes(ctx, inv); passed != 1 || failed != 2 {
		t.Fatalf("with run 0 pending again: passed %d, failed %d; want 1 and 2", passed, failed)
	}
}

// Counters that add up to every run of a never-resubmitted invocation
// give its outcome; any other case is left to counting the results.
func TestCountersTotal(t *testing.T) {
	nc, err := nats.Connect(testenv.StartNATS(t))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	if err := EnsureStreams(ctx, js, 1); err != nil {
		t.Fatal(err)
	}
	a := New(js, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	add := func(inv, counter string, n int) {
		t.Helper()
		subject, err := events.TestCountSubject(inv, 1, counter)
		if err != nil {
			t.Fatal(err)
		}
		msg := nats.NewMsg(subject)
		msg.Header.Set("Nats-Incr", strconv.Itoa(n))
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	inv := func(id string, resubmitted bool) *testingv1.Invocation {
		i := &testingv1.Invocation{InvocationId: id, WorkspaceId: "ws", RepeatCount: 2, Tests: []*testingv1.PlannedTest{{TestId: "t1"}, {TestId: "t2"}}}
		if resubmitted {
			i.Resubmissions = []*testingv1.Resubmission{{Attempt: 2, RunIds: []string{domain.RunID(id, 0)}}}
		}
		return i
	}
	add("tinv_full", "done", 4)
	add("tinv_full", "passed", 3)
	if p, f, exact, err := a.countersTotal(ctx, inv("tinv_full", false)); err != nil || !exact || p != 3 || f != 1 {
		t.Fatalf("all 4 runs counted: passed %d, failed %d, exact %v, %v", p, f, exact, err)
	}
	if _, _, exact, _ := a.countersTotal(ctx, inv("tinv_full", true)); exact {
		t.Fatal("a resubmitted invocation's counters taken as exact")
	}
	add("tinv_short", "done", 3) // a runner died before adding its last result
	if _, _, exact, _ := a.countersTotal(ctx, inv("tinv_short", false)); exact {
		t.Fatal("counters short of the runs taken as exact")
	}
}
