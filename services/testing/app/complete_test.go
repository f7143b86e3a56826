package app_test

import (
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	events "github.com/voiceai-platform/voiceai/proto-events"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"google.golang.org/protobuf/proto"

	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/services/testing/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// newApp is the app on memory adapters, at a fixed time.
func newApp(t *testing.T) (*app.App, *memory.Ports) {
	t.Helper()
	now := func() time.Time { return time.Unix(1_700_000_000, 0) }
	p := memory.NewPorts(now)
	return app.New(p.Ports(), nil, slog.New(slog.DiscardHandler), now), p
}

// storeResult stores a run's result as a runner does, with or without the
// headers that let it be counted unread.
func storeResult(t *testing.T, runs app.RunsLog, ws, inv string, idx int, attempt int32, status string, headers bool, edit ...func(*testingv1.RunResult)) {
	t.Helper()
	ctx := context.Background()
	run := &testingv1.RunResult{RunId: domain.RunID(inv, idx), InvocationId: inv, WorkspaceId: ws, Attempt: attempt, Status: status}
	for _, e := range edit {
		e(run)
	}
	subject, _ := events.RunSubject(ws, inv, run.RunId)
	meta := &commonv1.EventMeta{EventId: "evt_" + strconv.Itoa(idx) + "_" + strconv.Itoa(int(attempt)), WorkspaceId: ws}
	ev, err := esproto.Encode(ctx, meta, &testingv1.RunCompleted{Meta: meta, Run: run})
	if err != nil {
		t.Fatal(err)
	}
	h := eventlog.Header{events.HeaderEventType: {ev.Type}}
	if headers {
		h.Set(events.HeaderRunStatus, status)
		h.Set(events.HeaderRunAttempt, strconv.Itoa(int(attempt)))
	}
	if _, err := runs.Publish(ctx, app.Message{Subject: subject, ID: run.RunId + "#" + strconv.Itoa(int(attempt)), Header: h, Data: ev.Data}); err != nil {
		t.Fatal(err)
	}
}

// Outcomes are counted over each run's newest result, from the results'
// headers, or from the result itself when it has none.
func TestCountOutcomes(t *testing.T) {
	a, p := newApp(t)
	ctx := context.Background()
	inv := &testingv1.Invocation{InvocationId: "tinv_c", WorkspaceId: "ws", RepeatCount: 4,
		Tests: []*testingv1.PlannedTest{{TestId: "test_1"}},
		// Run 3 was resubmitted: only its second attempt counts.
		Resubmissions: []*testingv1.Resubmission{{Attempt: 2, RunIds: []string{domain.RunID("tinv_c", 3)}}}}
	store := func(idx int, attempt int32, status string, headers bool) {
		storeResult(t, p.Runs, "ws", "tinv_c", idx, attempt, status, headers)
	}
	store(0, 1, domain.RunPassed, true)
	store(1, 1, domain.RunFailed, false) // stored without the headers
	store(2, 1, domain.RunPassed, false)
	store(3, 1, domain.RunPassed, true) // superseded by its resubmission...
	store(3, 2, domain.RunFailed, true) // ...which failed
	passed, failed, err := app.CountOutcomes(a, ctx, inv)
	if err != nil {
		t.Fatal(err)
	}
	if passed != 2 || failed != 2 {
		t.Fatalf("passed %d, failed %d; want 2 and 2", passed, failed)
	}
	// Before the resubmission's result is stored, the run is not counted.
	inv.Resubmissions = append(inv.Resubmissions, &testingv1.Resubmission{Attempt: 3, RunIds: []string{domain.RunID("tinv_c", 0)}})
	if passed, failed, _ = app.CountOutcomes(a, ctx, inv); passed != 1 || failed != 2 {
		t.Fatalf("with run 0 pending again: passed %d, failed %d; want 1 and 2", passed, failed)
	}
}

// Counters that add up to every run of a never-resubmitted invocation
// give its outcome; any other case is left to counting the results.
func TestCountersTotal(t *testing.T) {
	a, p := newApp(t)
	ctx := context.Background()
	add := func(inv, counter string, n int64) {
		t.Helper()
		subject, err := events.TestCountSubject(inv, 1, counter)
		if err != nil {
			t.Fatal(err)
		}
		p.Counts.Add(subject, n)
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
	if p, f, exact, err := app.CountersTotal(a, ctx, inv("tinv_full", false)); err != nil || !exact || p != 3 || f != 1 {
		t.Fatalf("all 4 runs counted: passed %d, failed %d, exact %v, %v", p, f, exact, err)
	}
	if _, _, exact, _ := app.CountersTotal(a, ctx, inv("tinv_full", true)); exact {
		t.Fatal("a resubmitted invocation's counters taken as exact")
	}
	add("tinv_short", "done", 3) // a runner died before adding its last result
	if _, _, exact, _ := app.CountersTotal(a, ctx, inv("tinv_short", false)); exact {
		t.Fatal("counters short of the runs taken as exact")
	}
}

func protoUnmarshal(b []byte, m proto.Message) error { return proto.Unmarshal(b, m) }
