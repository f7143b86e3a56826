package app_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	events "github.com/voiceai-platform/voiceai/proto-events"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/aggregate"
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
	round := w.get(inv.GetInvocationId()).GetJobsTotal()
	for range 2 {
		if err := w.a.GroupResults(ctx, "ws", inv.GetInvocationId(), round, 1); err != nil {
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

// Runs are grouped in run order, whatever order their runners stored
// them in: the same runs always give the same buckets and titles.
func TestGroupingTakesRunsInRunOrder(t *testing.T) {
	w := newWorld(t)
	inv := w.run(3)
	id := inv.GetInvocationId()
	for _, run := range []int{2, 0, 1} { // stored as runners finish
		w.workRun(id, run, func(int) string { return domain.RunPassed })
	}
	if !w.complete(id) {
		t.Fatal("not completed")
	}
	ctx := context.Background()
	if err := w.a.GroupResults(ctx, "ws", id, w.get(id).GetJobsTotal(), 1); err != nil {
		t.Fatal(err)
	}
	groups, err := w.a.ResultGroups(ctx, w.get(id), false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{domain.RunID(id, 0), domain.RunID(id, 1), domain.RunID(id, 2)}
	if len(groups) != 1 || len(groups[0].GetBuckets()) != 1 || !slices.Equal(groups[0].GetBuckets()[0].GetTestRunIds(), want) {
		t.Fatalf("groups %v; want one bucket of %v", groups, want)
	}
}

// A grouping given up records bucketing failed with the reason. One that
// reads its round still running is a stale read (the completion is
// stored before the job is queued), asked again; one of a job of a
// version before rounds records nothing then.
func TestGroupingGivenUpRecordsTheReason(t *testing.T) {
	w := newWorld(t)
	inv := w.run(2) // repeated runs are grouped
	ctx := context.Background()
	round := w.get(inv.GetInvocationId()).GetJobsTotal()
	if err := w.a.GroupResults(ctx, "ws", inv.GetInvocationId(), round, 1); !errors.Is(err, aggregate.ErrStaleRead) {
		t.Fatalf("grouping a round read running: %v; want a stale read, asked again", err)
	}
	if err := w.a.GroupResults(ctx, "ws", inv.GetInvocationId(), 0, 1); err != nil {
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
	msgs, err := w.a.RunResultMessages(ctx, &testingv1.RunJob{WorkspaceId: "ws", InvocationId: inv.GetInvocationId(), Attempt: 2}, res)
	if err != nil {
		t.Fatal(err)
	}
	msg := msgs[0]
	if msg.ID != runID+"#2" {
		t.Fatalf("id %q: a retried store of the attempt must be a duplicate", msg.ID)
	}
	if _, err := w.p.Runs.Publish(ctx, msg); err != nil {
		t.Fatal(err)
	}
	for attempt, want := range map[int32]bool{1: true, 2: true, 3: false} {
		if got, notice, err := w.a.RecordedRun(ctx, "ws", inv.GetInvocationId(), runID, attempt); err != nil || got != want || notice != nil {
			t.Fatalf("attempt %d recorded %v (notice %v), %v; want %v without a notice (it passed)", attempt, got, notice, err, want)
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
		msgs, err := w.a.RunResultMessages(context.Background(), &testingv1.RunJob{WorkspaceId: "ws", InvocationId: inv.GetInvocationId(), Attempt: 3}, res)
		if err != nil {
			t.Fatal(err)
		}
		msg := msgs[0]
		if got := msg.Header.Get(events.HeaderRunStatus); got != want {
			t.Errorf("a %s run's status header is %q; its readers look for %q", status, got, want)
		}
		if got := msg.Header.Get(events.HeaderRunAttempt); got != "3" {
			t.Errorf("attempt header %q; want 3", got)
		}
	}
}

// A failed run's result is stored twice: on the run's subject, and as
// the same event on its failure subject under an id of its own, for the
// readers of failed runs alone (the QA worker). A passed run's is stored
// once. Once stored, the failed run's notice can be made again from the
// log, for a redelivered job to store.
func TestAFailedRunsResultIsAlsoANotice(t *testing.T) {
	w := newWorld(t)
	inv := w.run(1)
	ctx := context.Background()
	runID := domain.RunID(inv.GetInvocationId(), 0)
	job := &testingv1.RunJob{WorkspaceId: "ws", InvocationId: inv.GetInvocationId(), Attempt: 1}
	passed := &testingv1.RunResult{RunId: runID, InvocationId: inv.GetInvocationId(), WorkspaceId: "ws", Attempt: 1, Status: domain.RunPassed}
	if msgs, err := w.a.RunResultMessages(ctx, job, passed); err != nil || len(msgs) != 1 {
		t.Fatalf("a passed run: %d messages, %v; want its result alone", len(msgs), err)
	}
	failed := &testingv1.RunResult{RunId: runID, InvocationId: inv.GetInvocationId(), WorkspaceId: "ws", Attempt: 1, Status: domain.RunFailed}
	msgs, err := w.a.RunResultMessages(ctx, job, failed)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("a failed run: %d messages, %v; want its result and its notice", len(msgs), err)
	}
	wantSubject, _ := events.RunFailureSubject("ws", inv.GetInvocationId(), runID)
	result, notice := msgs[0], msgs[1]
	if notice.Subject != wantSubject || notice.ID == result.ID || !bytes.Equal(notice.Data, result.Data) ||
		notice.Header.Get(events.HeaderRunStatus) != events.RunStatusFailed || notice.Header.Get(events.HeaderEventType) != result.Header.Get(events.HeaderEventType) {
		t.Fatalf("notice %s %q %v; want the result (%q) again on %s", notice.Subject, notice.ID, notice.Header, result.ID, wantSubject)
	}
	if _, err := w.p.Runs.Publish(ctx, result); err != nil {
		t.Fatal(err)
	}
	recorded, again, err := w.a.RecordedRun(ctx, "ws", inv.GetInvocationId(), runID, 1)
	if err != nil || !recorded || again == nil {
		t.Fatalf("recorded %v, notice %v, %v; want the notice made again", recorded, again, err)
	}
	if again.Subject != notice.Subject || again.ID != notice.ID || !bytes.Equal(again.Data, notice.Data) {
		t.Fatalf("made again: %s %q; want %s %q with the same event", again.Subject, again.ID, notice.Subject, notice.ID)
	}
}
