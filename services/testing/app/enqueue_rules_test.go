package app_test

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	events "github.com/voiceai-platform/voiceai/proto-events"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/testing/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// Rule tests of the enqueuer (RunEnqueuer) on the memory feed and queue:
// the test appends invocation events to the feed and reads the queue.

// invoke runs copies of the world's test repeat times; nothing is queued
// until the enqueuer handles the event.
func (w *world) invoke(copies, repeat int) *testingv1.Invocation {
	w.t.Helper()
	tests := make([]app.TestRef, copies)
	for i := range tests {
		tests[i] = app.TestRef{TestID: w.test}
	}
	inv, err := w.a.RunTests(context.Background(), w.c, agentID, app.RunTestsInput{Tests: tests, RepeatCount: &repeat})
	if err != nil {
		w.t.Fatal(err)
	}
	return inv
}

// startEnqueuer runs the enqueuer on the world's feed; it is stopped (and
// must return nil) when the test ends.
func (w *world) startEnqueuer() {
	w.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.a.RunEnqueuer(ctx) }()
	w.t.Cleanup(func() {
		cancel()
		var err error
		testkit.Eventually(w.t, 5*time.Second, "the enqueuer returns once its context ends", func() bool {
			select {
			case err = <-done:
				return true
			default:
				return false
			}
		})
		if err != nil {
			w.t.Errorf("the enqueuer returned %v", err)
		}
	})
}

// queuedMark is the jobs total the enqueuer recorded as queued for the
// invocation ("" before any).
func (w *world) queuedMark(id string) string {
	w.t.Helper()
	subject, _ := events.TestRunsQueuedSubject(w.c.WorkspaceID, id)
	rec, found, err := w.p.Runs.Last(context.Background(), subject)
	if err != nil {
		w.t.Fatal(err)
	}
	if !found {
		return ""
	}
	return string(rec.Data)
}

// awaitQueued waits until the enqueuer has recorded want as the
// invocation's queued total: every event before it on the feed is handled.
func (w *world) awaitQueued(id, want string) {
	w.t.Helper()
	testkit.Eventually(w.t, 5*time.Second, "invocation "+id+" queued up to "+want, func() bool { return w.queuedMark(id) == want })
}

// deliverLast delivers the invocation's last event on the feed, and waits
// until the enqueuer has queued it up to want.
func (w *world) deliverLast(id, want string) {
	w.t.Helper()
	w.p.Feed.Append(w.lastEvent(id))
	w.awaitQueued(id, want)
}

// queuedJob is a job on the queue and the run job it carries.
type queuedJob struct {
	msg app.Message
	job *testingv1.RunJob
}

// jobsOf are the invocation's jobs on the queue, in queue order.
func (w *world) jobsOf(id string) []queuedJob {
	w.t.Helper()
	filter, _ := events.TestJobsOfInvocation(w.c.WorkspaceID, id)
	var out []queuedJob
	for _, m := range w.p.Jobs.Snapshot() {
		if !events.SubjectMatches(filter, m.Subject) {
			continue
		}
		job := &testingv1.RunJob{}
		if err := protoUnmarshal(m.Data, job); err != nil {
			w.t.Fatal(err)
		}
		out = append(out, queuedJob{m, job})
	}
	return out
}

// wantRunJobs checks the invocation's queued jobs are its runs in index
// order, each run in exactly one job: per runs a job, the last job the
// rest, each named by its first run and attempt, on that run's subject.
func wantRunJobs(t *testing.T, inv *testingv1.Invocation, jobs []queuedJob, per int) {
	t.Helper()
	id, repeat := inv.GetInvocationId(), int(inv.GetRepeatCount())
	total := len(inv.GetTests()) * repeat
	if want := (total + per - 1) / per; len(jobs) != want {
		t.Fatalf("%d jobs queued for %d runs; want %d of %d runs", len(jobs), total, want, per)
	}
	next := 0
	for i, q := range jobs {
		j := q.job
		runs := min(per, total-next)
		subject, _ := events.TestJobSubject(inv.GetWorkspaceId(), id, domain.RunID(id, next))
		if j.GetKind() != "run" || j.GetRunId() != domain.RunID(id, next) || int(j.GetRunCount()) != runs || j.GetAttempt() != 1 ||
			int(j.GetTestIndex()) != next/repeat || int(j.GetRepeatIndex()) != next%repeat ||
			j.GetWorkspaceId() != inv.GetWorkspaceId() || j.GetInvocationId() != id ||
			q.msg.ID != domain.RunID(id, next)+"#1" || q.msg.Subject != subject {
			t.Fatalf("job %d: %v (id %s, subject %s); want runs %d..%d (test %d, repeat %d)", i, j, q.msg.ID, q.msg.Subject,
				next, next+runs-1, next/repeat, next%repeat)
		}
		next += runs
	}
}

// A new invocation's runs are queued in index order, one job each, then
// recorded as queued; an event delivered again (the feed delivers at
// least once) queues nothing twice.
func TestTheEnqueuerQueuesEachRunOfANewInvocationOnce(t *testing.T) {
	w := newWorld(t)
	w.startEnqueuer()
	inv := w.invoke(2, 3)
	id := inv.GetInvocationId()
	w.deliverLast(id, "6")
	wantRunJobs(t, inv, w.jobsOf(id), 1)

	// Delivered again, then another invocation: once that one is queued,
	// the copy was handled.
	w.p.Feed.Append(w.lastEvent(id))
	other := w.invoke(1, 1)
	w.deliverLast(other.GetInvocationId(), "1")
	wantRunJobs(t, inv, w.jobsOf(id), 1)
}

// A large invocation's runs are grouped, RunsPerJob(total) to a job, the
// last job taking what is left; its queued total is its jobs total.
func TestTheEnqueuerGroupsTheRunsOfALargeInvocation(t *testing.T) {
	w := newWorld(t)
	w.startEnqueuer()
	inv := w.invoke(211, 49) // 10,339 runs: 2 a job, 5,170 jobs
	if per := domain.RunsPerJob(211 * 49); per != 2 {
		t.Fatalf("RunsPerJob(10339) = %d; the case wants 2", per)
	}
	id := inv.GetInvocationId()
	w.deliverLast(id, "10339")
	wantRunJobs(t, inv, w.jobsOf(id), 2)
}

// A resubmission queues only the runs its latest round names, one job
// each, as that round's attempt, and records the new jobs total.
func TestTheEnqueuerQueuesTheLatestResubmission(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.startEnqueuer()
	inv := w.invoke(2, 3)
	id := inv.GetInvocationId()
	w.deliverLast(id, "6")
	for _, round := range []struct {
		runs  []int
		total string
	}{
		{[]int{4, 1}, "8"},
		{[]int{5}, "9"},
	} {
		w.work(id, passEven)
		if !w.complete(id) {
			t.Fatal("not completed with every job done")
		}
		in := app.ResubmitInput{AgentID: agentID}
		for _, r := range round.runs {
			in.TestRunIDs = append(in.TestRunIDs, domain.RunID(id, r))
		}
		got, err := w.a.Resubmit(ctx, w.c, id, in)
		if err != nil {
			t.Fatal(err)
		}
		attempt := got.GetResubmissions()[len(got.GetResubmissions())-1].GetAttempt()
		w.deliverLast(id, round.total)
		jobs := w.jobsOf(id)
		if len(jobs) != len(round.runs) {
			t.Fatalf("resubmitting runs %v queued %d jobs", round.runs, len(jobs))
		}
		for i, r := range round.runs {
			j := jobs[i].job
			if j.GetRunId() != domain.RunID(id, r) || j.GetAttempt() != attempt || j.GetRunCount() != 1 ||
				int(j.GetTestIndex()) != r/3 || int(j.GetRepeatIndex()) != r%3 || jobs[i].msg.ID != domain.RunID(id, r)+"#"+strconv.Itoa(int(attempt)) {
				t.Fatalf("job %d of the resubmission of %v: %v (id %s); want run %d, attempt %d", i, round.runs, j, jobs[i].msg.ID, r, attempt)
			}
		}
	}
}

// The jobs continue the invoking request's trace: each carries the
// event's traceparent, and none is made up for an event without one.
func TestTheEnqueuedRunsCarryTheInvokingTrace(t *testing.T) {
	const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, tc := range []struct{ name, traceparent string }{{"traced", traceparent}, {"untraced", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.startEnqueuer()
			inv := w.invoke(1, 2)
			rec := w.lastEvent(inv.GetInvocationId())
			rec.Header = maps.Clone(rec.Header)
			if rec.Header == nil {
				rec.Header = eventlog.Header{}
			}
			delete(rec.Header, events.HeaderTraceparent)
			if tc.traceparent != "" {
				rec.Header.Set(events.HeaderTraceparent, tc.traceparent)
			}
			w.p.Feed.Append(rec)
			w.awaitQueued(inv.GetInvocationId(), "2")
			for _, q := range w.jobsOf(inv.GetInvocationId()) {
				if got := q.msg.Header[events.HeaderTraceparent]; len(got) != len(nonEmpty(tc.traceparent)) ||
					(len(got) == 1 && got[0] != tc.traceparent) {
					t.Fatalf("job %s carries traceparent %q; want %q", q.msg.ID, got, tc.traceparent)
				}
			}
		})
	}
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// Events other than a creation or a resubmission queue nothing.
func TestTheEnqueuerIgnoresOtherInvocationEvents(t *testing.T) {
	w := newWorld(t)
	w.startEnqueuer()
	cancelled := w.invoke(1, 2)
	if _, err := w.a.Cancel(context.Background(), w.c, cancelled.GetInvocationId()); err != nil {
		t.Fatal(err)
	}
	w.p.Feed.Append(w.lastEvent(cancelled.GetInvocationId())) // invocation_cancelled
	next := w.invoke(1, 1)
	w.deliverLast(next.GetInvocationId(), "1")
	if jobs, mark := w.jobsOf(cancelled.GetInvocationId()), w.queuedMark(cancelled.GetInvocationId()); len(jobs) != 0 || mark != "" {
		t.Fatalf("a cancellation queued %d jobs and recorded %q queued", len(jobs), mark)
	}
}

// An invocation cancelled before the enqueuer reached it has nothing
// queued, neither then nor once a resubmission has it running again (the
// feed delivers its creation late, or again): only the resubmitted run
// runs, and the others stay cancelled, not counted.
func TestTheEnqueuerQueuesNothingOfACancelledRound(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	inv := w.invoke(3, 1)
	id := inv.GetInvocationId()
	created := w.lastEvent(id)
	if _, err := w.a.Cancel(ctx, w.c, id); err != nil {
		t.Fatal(err)
	}
	if err := app.Enqueue(w.a, ctx, created, func() {}); err != nil {
		t.Fatal(err)
	}
	if jobs := w.jobsOf(id); len(jobs) != 0 {
		t.Fatalf("%d jobs queued for a cancelled invocation", len(jobs))
	}
	if _, err := w.a.Resubmit(ctx, w.c, id, app.ResubmitInput{TestRunIDs: []string{domain.RunID(id, 0)}, AgentID: agentID}); err != nil {
		t.Fatal(err)
	}
	if err := app.Enqueue(w.a, ctx, created, func() {}); err != nil {
		t.Fatal(err)
	}
	w.enqueueLast(id)
	jobs := w.work(id, func(int) string { return domain.RunFailed })
	if len(jobs) != 1 || jobs[0].GetRunId() != domain.RunID(id, 0) || jobs[0].GetAttempt() != 2 {
		t.Fatalf("queued %v; want run 0's attempt 2 alone", jobs)
	}
	if !w.complete(id) {
		t.Fatal("the resubmission did not complete")
	}
	got := w.get(id)
	statuses := []string{}
	if _, err := w.a.EachRun(ctx, got, false, nil, func(_ int, _ string, res *testingv1.RunResult, unrun string) error {
		statuses = append(statuses, app.RunStatus(res, unrun))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{domain.RunFailed, domain.RunCancelled, domain.RunCancelled}; got.GetPassedCount() != 0 || got.GetFailedCount() != 1 ||
		!slices.Equal(statuses, want) {
		t.Fatalf("passed %d failed %d, runs %v; want failed 1, runs %v", got.GetPassedCount(), got.GetFailedCount(), statuses, want)
	}
}

// flakyJobs is the memory queue failing its first enqueues, as a queue
// briefly unreachable does.
type flakyJobs struct {
	app.JobQueue
	mu    sync.Mutex
	fails int
}

func (q *flakyJobs) Enqueue(ctx context.Context, n int, job func(int) (app.Message, error)) error {
	q.mu.Lock()
	fail := q.fails > 0
	q.fails--
	q.mu.Unlock()
	if fail {
		return errors.New("queue unreachable")
	}
	return q.JobQueue.Enqueue(ctx, n, job)
}

// An event the enqueuer failed to queue is handed back to the feed,
// which delivers it again: its runs are queued then.
func TestAnEventTheEnqueuerFailedIsQueuedOnItsRedelivery(t *testing.T) {
	w := newWorld(t)
	w.a.Jobs = &flakyJobs{JobQueue: w.p.Jobs, fails: 2}
	w.startEnqueuer()
	inv := w.invoke(1, 3)
	w.deliverLast(inv.GetInvocationId(), "3")
	wantRunJobs(t, inv, w.jobsOf(inv.GetInvocationId()), 1)
}

// Queuing a large invocation tells the feed the event is still being
// worked on at least every 10 seconds (so it is not redelivered as
// abandoned); a quick one never does.
func TestTheEnqueuerBeatsWhileQueuingALargeInvocation(t *testing.T) {
	for _, tc := range []struct {
		name           string
		copies, repeat int
		beats          bool
	}{
		{"quick", 2, 3, false},
		{"large", 211, 49, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			inv := w.invoke(tc.copies, tc.repeat)
			rec := w.lastEvent(inv.GetInvocationId())
			// Every reading of the clock is a second later.
			w.a.Now = func() time.Time { w.clock.Add(time.Second); return w.clock.Now() }
			start := w.clock.Now()
			var beats []time.Time
			if err := app.Enqueue(w.a, context.Background(), rec, func() { beats = append(beats, w.clock.Now()) }); err != nil {
				t.Fatal(err)
			}
			end := w.clock.Now()
			if !tc.beats {
				if len(beats) != 0 {
					t.Fatalf("queuing %d runs over %s beat %d times", tc.copies*tc.repeat, end.Sub(start), len(beats))
				}
				return
			}
			last := start
			for _, b := range append(beats, end) {
				if gap := b.Sub(last); gap > 12*time.Second {
					t.Fatalf("%s without a beat while queuing (%d beats over %s)", gap, len(beats), end.Sub(start))
				}
				last = b
			}
		})
	}
}

// answeringFeed hands each of its records to the enqueuer once, in order,
// and keeps what the enqueuer answered for each.
type answeringFeed struct {
	recs    []app.Record
	answers chan error
}

func (f *answeringFeed) Follow(ctx context.Context, handle func(context.Context, app.Record, func()) error) error {
	for _, r := range f.recs {
		f.answers <- handle(ctx, r, func() {})
	}
	<-ctx.Done()
	return nil
}

// An invocation event the enqueuer cannot read, of a type it does not
// know (a newer version's, mid-upgrade) or of bytes no decoder takes, is
// passed by (done), not failed: failed, it would be delivered again and
// again, each holding one of the feed's few places in hand for good.
func TestTheEnqueuerPassesByWhatItCannotRead(t *testing.T) {
	w := newWorld(t)
	inv := w.invoke(1, 1)
	good := w.lastEvent(inv.GetInvocationId())
	corrupt := good
	corrupt.Data = []byte{0xff, 0xff, 0xff}
	unknown := good
	unknown.Type = "testing.invocation_archived"
	feed := &answeringFeed{recs: []app.Record{unknown, corrupt, good}, answers: make(chan error, 3)}
	w.a.Feed = feed
	w.startEnqueuer()
	for _, what := range []string{"an event of a type it does not know", "an event it cannot decode", "the invocation's creation"} {
		if err := <-feed.answers; err != nil {
			t.Errorf("%s: answered %v, want it done", what, err)
		}
	}
	if jobs := w.jobsOf(inv.GetInvocationId()); len(jobs) != 1 {
		t.Fatalf("%d jobs queued after the events it could not read, want the invocation's 1", len(jobs))
	}
}

// staleStore answers every read of an aggregate's last event "none", as a
// store between leaders may for a moment, while stale is set.
type staleStore struct {
	eventlog.Store
	stale bool
}

func (s *staleStore) Last(ctx context.Context, subject string) (eventlog.Record, bool, error) {
	if s.stale {
		return eventlog.Record{}, false, nil
	}
	return s.Store.Last(ctx, subject)
}

// The invocation an event carries exists: a read that does not find it is
// stale, and the event is asked again, not settled with nothing queued
// (the cluster tier's invocation left running for good, with no job, no
// queued total, its event acknowledged by the enqueuer). Only an event
// older than a stale read lasts (a stream made anew without it) is passed
// by.
func TestTheEnqueuerAsksAgainWhenItsInvocationReadsStale(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	inv := w.invoke(2, 1)
	id := inv.GetInvocationId()
	created := w.lastEvent(id)

	ports := w.p.Ports()
	stale := &staleStore{Store: ports.Testing, stale: true}
	ports.Testing = stale
	reader := app.New(ports, memory.NewIndex(), slog.New(slog.DiscardHandler), w.clock.Now)
	if err := app.Enqueue(reader, ctx, created, func() {}); err == nil {
		t.Fatal("an event whose invocation read stale was settled")
	}
	if jobs, mark := w.jobsOf(id), w.queuedMark(id); len(jobs) != 0 || mark != "" {
		t.Fatalf("a stale read queued %d jobs and recorded %q queued", len(jobs), mark)
	}

	stale.stale = false // the store caught up: the event delivered again is queued
	if err := app.Enqueue(reader, ctx, created, func() {}); err != nil {
		t.Fatal(err)
	}
	wantRunJobs(t, inv, w.jobsOf(id), domain.RunsPerJob(2))
	if mark := w.queuedMark(id); mark != "2" {
		t.Fatalf("queued total %q; want 2", mark)
	}

	stale.stale = true
	old := w.invoke(1, 1)
	ancient := w.lastEvent(old.GetInvocationId())
	ancient.Time = w.clock.Now().Add(-11 * time.Minute)
	if err := app.Enqueue(reader, ctx, ancient, func() {}); err != nil {
		t.Fatalf("an event older than any stale read, whose invocation does not read: %v; want it passed by", err)
	}
	if jobs := w.jobsOf(old.GetInvocationId()); len(jobs) != 0 {
		t.Fatalf("%d jobs queued for an invocation that does not read", len(jobs))
	}
}

// An invocation that does not read may read stale only in the minutes
// after its job was queued; later it is gone.
func TestAnInvocationMayReadStaleOnlyMomentsAfterItsJobWasQueued(t *testing.T) {
	now := time.Now()
	clock := func() time.Time { return now }
	a := app.New(memory.NewPorts(clock).Ports(), memory.NewIndex(), slog.New(slog.DiscardHandler), clock)
	queued := now
	if !a.MayReadStale(queued) {
		t.Fatal("the invocation of a job queued moments ago that does not read is taken for gone")
	}
	now = now.Add(11 * time.Minute)
	if a.MayReadStale(queued) {
		t.Fatal("the invocation of a job queued 11 minutes ago that does not read may still read stale")
	}
	if a.MayReadStale(time.Time{}) {
		t.Fatal("a job of no known queuing time may read stale")
	}
}

// A round whose jobs the enqueuer never queued (its event settled with
// nothing queued, whatever the cause) is queued by the completion sweeper
// once it is overdue, and the invocation completes; before, it stayed
// running for good. A round the enqueuer may still be working on is left
// to it.
func TestTheSweeperQueuesARoundTheEnqueuerMissed(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.p.Testing.Now = w.clock.Now
	inv := w.invoke(2, 1)
	id := inv.GetInvocationId()
	w.clock.Add(5 * time.Second)
	if done, err := w.a.CheckCompletion(ctx, w.c.WorkspaceID, id); err != nil || done {
		t.Fatalf("a fresh round: done %v, %v", done, err)
	}
	if jobs := w.jobsOf(id); len(jobs) != 0 {
		t.Fatalf("the sweeper queued %d jobs of a round the enqueuer may be working on", len(jobs))
	}
	w.clock.Add(time.Minute)
	if _, err := w.a.CheckCompletion(ctx, w.c.WorkspaceID, id); err != nil {
		t.Fatal(err)
	}
	wantRunJobs(t, inv, w.jobsOf(id), domain.RunsPerJob(2))
	if mark := w.queuedMark(id); mark != "2" {
		t.Fatalf("queued total %q; want 2", mark)
	}
	w.work(id, func(int) string { return domain.RunPassed })
	if done, err := w.a.CheckCompletion(ctx, w.c.WorkspaceID, id); err != nil || !done {
		t.Fatalf("the round queued by the sweeper, run: done %v, %v", done, err)
	}
}

// While the process holds its writes (its disk nearly full), the sweeper
// queues no missed round: the enqueuer is held as well.
func TestTheSweeperQueuesNoMissedRoundWhileWritesAreHeld(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.p.Testing.Now = w.clock.Now
	held := errors.New("the disk is nearly full")
	w.a.WritesHeld = func() error { return held }
	id := w.invoke(1, 1).GetInvocationId()
	w.clock.Add(time.Minute)
	if _, err := w.a.CheckCompletion(ctx, w.c.WorkspaceID, id); err != nil {
		t.Fatal(err)
	}
	if jobs := w.jobsOf(id); len(jobs) != 0 {
		t.Fatalf("%d jobs queued while writes are held", len(jobs))
	}
	held = nil
	if _, err := w.a.CheckCompletion(ctx, w.c.WorkspaceID, id); err != nil {
		t.Fatal(err)
	}
	if jobs := w.jobsOf(id); len(jobs) != 1 {
		t.Fatalf("%d jobs queued once writes go on; want 1", len(jobs))
	}
}
