package app_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// Rule tests of the workspace quotas and the run retention, on the memory
// adapters.

// limited is a world with limits, counting the refusals by quota.
func limited(t *testing.T, l app.Limits) (*world, map[string]int) {
	w := newWorld(t)
	w.a.Limits = l
	refused := map[string]int{}
	w.a.QuotaRefused = func(q string) { refused[q]++ }
	return w, refused
}

// runTests runs copies of the world's test repeat times, as c.
func (w *world) runTests(c principal.Caller, copies, repeat int) (*testingv1.Invocation, error) {
	w.t.Helper()
	tests := make([]app.TestRef, copies)
	for i := range tests {
		tests[i] = app.TestRef{TestID: w.test}
	}
	inv, err := w.a.RunTests(context.Background(), c, agentID, app.RunTestsInput{Tests: tests, RepeatCount: &repeat})
	if err == nil && c.WorkspaceID == "ws" {
		w.enqueueLast(inv.GetInvocationId())
	}
	return inv, err
}

// wantRefused checks err is the quota refusal of quota, naming its limit
// and what the request would have made it.
func wantRefused(t *testing.T, err error, refused map[string]int, quota string, n int, limit, would string) {
	t.Helper()
	var e *apperr.Error
	if !errors.As(err, &e) || e.Status != "quota_exceeded" || e.Kind != apperr.RateLimited {
		t.Fatalf("err = %v; want quota_exceeded (429)", err)
	}
	if !strings.Contains(e.Message, "limited to "+limit+" ") || !strings.Contains(e.Message, "make them "+would+".") {
		t.Fatalf("message %q; want the limit %s and %s", e.Message, limit, would)
	}
	if refused[quota] != n {
		t.Fatalf("refusals %v; want %d of %s", refused, n, quota)
	}
}

func TestActiveInvocationsAreLimitedPerWorkspace(t *testing.T) {
	w, refused := limited(t, app.Limits{MaxActiveInvocations: 2})
	ctx := context.Background()
	first, err := w.runTests(w.c, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	second, err := w.runTests(w.c, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.runTests(w.c, 1, 1)
	wantRefused(t, err, refused, app.QuotaActiveInvocations, 1, "2", "3")

	// Another workspace has its own quota.
	other := principal.Caller{Principal: principal.Principal{WorkspaceID: "ws2", UserID: "u2"}}
	subject, _ := events.AgentSubject("ws2", agentID)
	meta := esproto.Meta(ctx, "ws2", "", w.clock.Now())
	if _, err := esproto.Append(ctx, w.p.Agents, subject, 0, meta, &agentsv1.AgentCreated{Meta: meta,
		Agent: &agentsv1.Agent{AgentId: agentID, WorkspaceId: "ws2", Name: "Other"}}); err != nil {
		t.Fatal(err)
	}
	test, err := w.a.CreateTest(ctx, other, []byte(`{"type":"llm","name":"Other","success_condition":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	repeat := 1
	if _, err := w.a.RunTests(ctx, other, agentID, app.RunTestsInput{Tests: []app.TestRef{{TestID: test.GetTestId()}}, RepeatCount: &repeat}); err != nil {
		t.Fatalf("another workspace refused: %v", err)
	}

	// A completed invocation frees its place, and so does a cancelled one.
	w.work(first.GetInvocationId(), passEven)
	if !w.complete(first.GetInvocationId()) {
		t.Fatal("not completed")
	}
	if _, err := w.runTests(w.c, 1, 1); err != nil {
		t.Fatalf("refused after one completed: %v", err)
	}
	_, err = w.runTests(w.c, 1, 1)
	wantRefused(t, err, refused, app.QuotaActiveInvocations, 2, "2", "3")
	if _, err := w.a.Cancel(ctx, w.c, second.GetInvocationId()); err != nil {
		t.Fatal(err)
	}
	if _, err := w.runTests(w.c, 1, 1); err != nil {
		t.Fatalf("refused after one was cancelled: %v", err)
	}
}

// Duplicate test ids are accepted and counted: each copy, times
// repeat_count, is a queued run.
func TestQueuedRunsCountDuplicatesTimesRepeat(t *testing.T) {
	w, refused := limited(t, app.Limits{MaxActiveInvocations: 10, MaxQueuedRuns: 10})
	first, err := w.runTests(w.c, 3, 3) // 9 runs
	if err != nil {
		t.Fatal(err)
	}
	if len(first.GetTests()) != 3 || first.GetJobsTotal() != 9 {
		t.Fatalf("planned %d tests, %d runs; want the 3 copies, 9 runs", len(first.GetTests()), first.GetJobsTotal())
	}
	_, err = w.runTests(w.c, 1, 2)
	wantRefused(t, err, refused, app.QuotaQueuedRuns, 1, "10", "11")
	if _, err := w.runTests(w.c, 1, 1); err != nil { // exactly 10
		t.Fatalf("refused at the limit: %v", err)
	}
	_, err = w.runTests(w.c, 1, 1)
	wantRefused(t, err, refused, app.QuotaQueuedRuns, 2, "10", "11")

	// Runs done leave the queue, although their invocation still runs.
	w.work(first.GetInvocationId(), passEven)
	if got := w.get(first.GetInvocationId()); got.GetStatus() != domain.InvocationRunning {
		t.Fatalf("status %s; want running (its completion not yet seen)", got.GetStatus())
	}
	if _, err := w.runTests(w.c, 3, 3); err != nil { // 1 + 9
		t.Fatalf("refused with the first invocation's runs done: %v", err)
	}
	_, err = w.runTests(w.c, 1, 1)
	wantRefused(t, err, refused, app.QuotaQueuedRuns, 3, "10", "11")
	if refused[app.QuotaActiveInvocations] != 0 {
		t.Fatalf("refusals %v", refused)
	}
}

// A retried run-tests (same Idempotency-Key) answers the first invocation,
// even when the quota is now full with it.
func TestARetriedRunTestsIsNotRefused(t *testing.T) {
	w, _ := limited(t, app.Limits{MaxActiveInvocations: 1})
	c := w.c
	c.CommandID = "cmd_1"
	first, err := w.runTests(c, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	again, err := w.runTests(c, 1, 1)
	if err != nil || again.GetInvocationId() != first.GetInvocationId() {
		t.Fatalf("retry answered %v, %v; want %s", again.GetInvocationId(), err, first.GetInvocationId())
	}
}

// A resubmit queues runs again: it counts toward both quotas.
func TestResubmitIsWithinTheQuotas(t *testing.T) {
	w, refused := limited(t, app.Limits{MaxActiveInvocations: 2, MaxQueuedRuns: 5})
	ctx := context.Background()
	done, err := w.runTests(w.c, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	w.work(done.GetInvocationId(), passEven)
	if !w.complete(done.GetInvocationId()) {
		t.Fatal("not completed")
	}
	busy, err := w.runTests(w.c, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	all := []string{domain.RunID(done.GetInvocationId(), 0), domain.RunID(done.GetInvocationId(), 1), domain.RunID(done.GetInvocationId(), 2)}
	in := app.ResubmitInput{AgentID: agentID, TestRunIDs: all}
	_, err = w.a.Resubmit(ctx, w.c, done.GetInvocationId(), in)
	wantRefused(t, err, refused, app.QuotaQueuedRuns, 1, "5", "6")
	in.TestRunIDs = all[:2]
	if _, err := w.a.Resubmit(ctx, w.c, done.GetInvocationId(), in); err != nil {
		t.Fatalf("a resubmit within the quotas refused: %v", err)
	}

	// With two active, a third (a resubmit too) is refused.
	w.a.Limits.MaxQueuedRuns = 0
	w.enqueueLast(done.GetInvocationId())
	w.work(done.GetInvocationId(), passEven)
	if !w.complete(done.GetInvocationId()) {
		t.Fatal("resubmission not completed")
	}
	if _, err := w.runTests(w.c, 1, 1); err != nil {
		t.Fatal(err)
	}
	_, err = w.a.Resubmit(ctx, w.c, done.GetInvocationId(), in)
	wantRefused(t, err, refused, app.QuotaActiveInvocations, 1, "2", "3")
	if _, err := w.a.Cancel(ctx, w.c, busy.GetInvocationId()); err != nil {
		t.Fatal(err)
	}
	if _, err := w.a.Resubmit(ctx, w.c, done.GetInvocationId(), in); err != nil {
		t.Fatalf("refused once another was cancelled: %v", err)
	}
}

// An invocation older than the run retention answers that its runs were
// deleted (its reads and its resubmit); listings keep its summary.
func TestAnInvocationPastTheRetentionHasExpired(t *testing.T) {
	w, _ := limited(t, app.Limits{RunRetention: 90 * 24 * time.Hour})
	ctx := context.Background()
	inv, err := w.runTests(w.c, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	id := inv.GetInvocationId()
	w.work(id, passEven)
	if !w.complete(id) {
		t.Fatal("not completed")
	}
	w.clock.Add(90 * 24 * time.Hour)
	if _, err := w.a.Invocation(ctx, "ws", id); err != nil {
		t.Fatalf("read at the retention: %v", err)
	}
	w.clock.Add(time.Second)
	expired := func(err error) {
		t.Helper()
		var e *apperr.Error
		if !errors.As(err, &e) || e.Status != "invocation_expired" || e.Kind != apperr.NotFound || !strings.Contains(e.Message, "deleted after 90 days") {
			t.Fatalf("err = %v; want invocation_expired (404) after 90 days", err)
		}
	}
	_, err = w.a.Invocation(ctx, "ws", id)
	expired(err)
	_, err = w.a.Resubmit(ctx, w.c, id, app.ResubmitInput{AgentID: agentID, TestRunIDs: []string{domain.RunID(id, 0)}})
	expired(err)
	page, err := w.a.PageInvocations(ctx, app.InvocationFilter{WorkspaceID: "ws", Limit: 10}, "")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(page.Rows, func(p app.InvocationProgress) bool { return p.ID == id && p.PassedCount == 1 }) {
		t.Fatalf("listing %+v; want the expired invocation's summary", page.Rows)
	}
	// Without a retention nothing expires.
	w.a.Limits.RunRetention = 0
	if _, err := w.a.Invocation(ctx, "ws", id); err != nil {
		t.Fatalf("kept forever: %v", err)
	}
}

func TestRetentionText(t *testing.T) {
	for d, want := range map[time.Duration]string{24 * time.Hour: "1 day", 2160 * time.Hour: "90 days", 90 * time.Minute: "1h30m0s"} {
		if got := app.RetentionText(d); got != want {
			t.Errorf("RetentionText(%s) = %q; want %q", d, got, want)
		}
	}
}
