package app_test

import (
	"context"
	"testing"

	events "github.com/voiceai-platform/voiceai/proto-events"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// A completed invocation's runs are grouped per test once: the groups
// are stored and bucketing completes; a second grouping (a redelivered
// job) changes nothing.
func TestGroupingRecordsEachTestsGroups(t *testing.T) {
	w := newWorld(t)
	inv := w.run(3)
	w.work(inv.GetInvocationId(), passEven)
	if !w.complete(inv.GetInvocationId()) {
		t.Fatal("not completed")
	}
	ctx := context.Background()
	for range 2 {
		if err := w.a.GroupResults(ctx, "ws", inv.GetInvocationId(), 1); err != nil {
			t.Fatal(err)
		}
	}
	got := w.get(inv.GetInvocationId())
	if got.GetBucketingStatus() != domain.BucketingCompleted {
		t.Fatalf("bucketing %q; want completed", got.GetBucketingStatus())
	}
	groups, err := w.a.ResultGroups(ctx, got, false)
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	for _, b := range groups[0].GetBuckets() {
		runs += len(b.GetTestRunIds())
	}
	if len(groups) != 1 || groups[0].GetTestId() != w.test || runs != 3 {
		t.Fatalf("groups %v", groups)
	}
}

// A grouping given up records bucketing failed with the reason; one not
// yet due (the invocation still running) records nothing.
func TestGroupingGivenUpRecordsTheReason(t *testing.T) {
	w := newWorld(t)
	inv := w.run(2) // repeated runs are grouped
	ctx := context.Background()
	if err := w.a.GroupResults(ctx, "ws", inv.GetInvocationId(), 1); err != nil {
		t.Fatal(err)
	}
	if got := w.get(inv.GetInvocationId()); got.GetBucketingStatus() != domain.BucketingPending {
		t.Fatalf("grouped while running: %q", got.GetBucketingStatus())
	}
	w.work(inv.GetInvocationId(), passEven)
	w.complete(inv.GetInvocationId())
	if err := w.a.GiveUpGrouping(ctx, "ws", inv.GetInvocationId(), "Grouping the results failed on every attempt."); err != nil {
		t.Fatal(err)
	}
	got := w.get(inv.GetInvocationId())
	if got.GetBucketingStatus() != domain.BucketingFailed || got.GetBucketingError() != "Grouping the results failed on every attempt." {
		t.Fatalf("bucketing %q %q", got.GetBucketingStatus(), got.GetBucketingError())
	}
}

// A run counts as recorded for its attempt and earlier ones, not later.
func TestARunIsRecordedForItsAttempt(t *testing.T) {
	w := newWorld(t)
	inv := w.run(1)
	ctx := context.Background()
	runID := domain.RunID(inv.GetInvocationId(), 0)
	res := &testingv1.RunResult{RunId: runID, InvocationId: inv.GetInvocationId(), WorkspaceId: "ws", Attempt: 2, Status: domain.RunPassed}
	msg, err := w.a.RunResultMessage(ctx, &testingv1.RunJob{WorkspaceId: "ws", InvocationId: inv.GetInvocationId(), Attempt: 2}, res)
	if err != nil {
		t.Fatal(err)
	}
	if msg.ID != runID+"#2" {
		t.Fatalf("id %q: a retried store of the attempt must be a duplicate", msg.ID)
	}
	if _, err := w.p.Runs.Publish(ctx, msg); err != nil {
		t.Fatal(err)
	}
	for attempt, want := range map[int32]bool{1: true, 2: true, 3: false} {
		if got, err := w.a.RunRecorded(ctx, "ws", inv.GetInvocationId(), runID, attempt); err != nil || got != want {
			t.Fatalf("attempt %d recorded %v, %v; want %v", attempt, got, err, want)
		}
	}
}

// A stored result states its run's status and attempt in headers, by the
// names the readers that skip the body compare with (events): the QA
// worker, which files tickets on failed runs, and the outcome count.
func TestAResultsHeadersStateItsOutcome(t *testing.T) {
	w := newWorld(t)
	inv := w.run(1)
	runID := domain.RunID(inv.GetInvocationId(), 0)
	for status, want := range map[string]string{domain.RunPassed: events.RunStatusPassed, domain.RunFailed: events.RunStatusFailed} {
		res := &testingv1.RunResult{RunId: runID, InvocationId: inv.GetInvocationId(), WorkspaceId: "ws", Attempt: 3, Status: status}
		msg, err := w.a.RunResultMessage(context.Background(), &testingv1.RunJob{WorkspaceId: "ws", InvocationId: inv.GetInvocationId(), Attempt: 3}, res)
		if err != nil {
			t.Fatal(err)
		}
		if got := msg.Header.Get(events.HeaderRunStatus); got != want {
			t.Errorf("a %s run's status header is %q; its readers look for %q", status, got, want)
		}
		if got := msg.Header.Get(events.HeaderRunAttempt); got != "3" {
			t.Errorf("attempt header %q; want 3", got)
		}
	}
}
