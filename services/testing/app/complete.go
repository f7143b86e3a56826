package app

import (
	"context"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/tick"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// An invocation is complete when every job it queued has been acked: run
// jobs leave the work queue once their result is stored. The enqueuer
// records how many jobs it has queued (events.TestRunsQueuedSubject), so
// an invocation still being queued is never taken for finished.

// MarkQueued records that jobs of the invocation, up to jobsTotal, are
// all on the work queue.
func (a *App) MarkQueued(ctx context.Context, ws, invocationID string, jobsTotal int64) error {
	subject, err := events.TestRunsQueuedSubject(ws, invocationID)
	if err != nil {
		return err
	}
	total := strconv.FormatInt(jobsTotal, 10)
	_, err = a.Runs.Publish(ctx, Message{Subject: subject, ID: invocationID + "#queued#" + total, Data: []byte(total)})
	return err
}

func (a *App) queued(ctx context.Context, ws, invocationID string) (int64, error) {
	subject, err := events.TestRunsQueuedSubject(ws, invocationID)
	if err != nil {
		return 0, err
	}
	rec, found, err := a.Runs.Last(ctx, subject)
	if err != nil || !found {
		return 0, err
	}
	return strconv.ParseInt(string(rec.Data), 10, 64)
}

// jobsLeft reports whether any run job of the invocation is still on the
// work queue (queued, or delivered and not yet acked).
func (a *App) jobsLeft(ctx context.Context, ws, invocationID string) (bool, error) {
	jobs, err := events.TestJobsOfInvocation(ws, invocationID)
	if err != nil {
		return false, err
	}
	return a.Jobs.Waiting(ctx, jobs)
}

// CheckCompletion completes a running invocation whose jobs are all done:
// it counts outcomes over each run's newest result, records the
// invocation completed, and queues bucketing when runs were repeated. It
// is safe to call from any number of processes at once.
func (a *App) CheckCompletion(ctx context.Context, ws, invocationID string) (bool, error) {
	return a.checkCompletion(ctx, ws, invocationID, false, true)
}

// ClaimCompletion is CheckCompletion for runners, which all check the
// invocations they work on: only the first to find one done completes it
// (counting a large invocation's results at once from every runner made
// them contend). Until mayCount, a runner completes only from counters
// that add up (another runner may not have added its last results yet);
// then it counts the results. Should that runner die, the completion
// sweeper, which claims nothing, completes the invocation.
func (a *App) ClaimCompletion(ctx context.Context, ws, invocationID string, mayCount bool) (bool, error) {
	return a.checkCompletion(ctx, ws, invocationID, true, mayCount)
}

// claimWindow is how long a runner's claim to complete a round holds off
// the sweeper; a claim older than that is taken for its runner's death.
const claimWindow = 30 * time.Second

func (a *App) claimedRecently(ctx context.Context, ws, invocationID, round string) (bool, error) {
	subject, err := events.TestRunsCompletingSubject(ws, invocationID)
	if err != nil {
		return false, err
	}
	rec, found, err := a.Runs.Last(ctx, subject)
	if err != nil || !found {
		return false, err
	}
	return string(rec.Data) == round && a.Now().Sub(rec.Time) < claimWindow, nil
}

func (a *App) checkCompletion(ctx context.Context, ws, invocationID string, claim, mayCount bool) (bool, error) {
	// While jobs are left, which is most of the time runners check, one
	// small read answers; the invocation (up to megabytes) is not read.
	// The check below repeats it after the queued total: a job queued in
	// between must not be missed.
	if left, err := a.jobsLeft(ctx, ws, invocationID); err != nil || left {
		return false, err
	}
	inv, last, err := a.Invocations.Latest(ctx, ws, invocationID)
	if err != nil || inv.GetStatus() != domain.InvocationRunning {
		return false, err
	}
	if inv.GetLoad() != nil { // a load test ends with its last step
		return a.checkLoadStep(ctx, inv)
	}
	if q, err := a.queued(ctx, ws, invocationID); err != nil || q < inv.GetJobsTotal() {
		if err == nil && !claim {
			err = a.queueMissedRound(ctx, invocationID, last)
		}
		return false, err
	}
	if left, err := a.jobsLeft(ctx, ws, invocationID); err != nil || left {
		return false, err
	}
	round := strconv.FormatInt(inv.GetJobsTotal(), 10)
	if !claim {
		// The sweeper leaves a round a runner claimed recently to it.
		if claimed, err := a.claimedRecently(ctx, ws, invocationID, round); err != nil || claimed {
			return false, err
		}
	}
	passed, failed, exact, err := a.countersTotal(ctx, inv)
	if err != nil || (!exact && !mayCount) {
		return false, err
	}
	if claim {
		// The stream's duplicate window makes the first claim of this
		// round (jobs_total) the only one stored.
		subject, err := events.TestRunsCompletingSubject(ws, invocationID)
		if err != nil {
			return false, err
		}
		dup, err := a.Runs.Publish(ctx, Message{Subject: subject, ID: invocationID + "#completing#" + round, Data: []byte(round)})
		if err != nil || dup {
			return false, err
		}
	}
	if !exact {
		if passed, failed, err = a.countOutcomes(ctx, inv); err != nil {
			return false, err
		}
	}
	var completed *testingv1.Invocation
	total := inv.GetJobsTotal()
	_, err = a.Invocations.Update(ctx, ws, invocationID, "", func(cur *testingv1.Invocation, meta *commonv1.EventMeta) (proto.Message, error) {
		if cur.Status != domain.InvocationRunning || cur.JobsTotal != total {
			return nil, nil
		}
		now := a.Now().Unix()
		cur.Status, cur.CompletedAtUnix, cur.PassedCount, cur.FailedCount = domain.InvocationCompleted, &now, passed, failed
		completed = cur
		return &testingv1.InvocationCompleted{Meta: meta, Invocation: cur, PassedCount: passed, FailedCount: failed}, nil
	})
	if err != nil || completed == nil {
		return false, err
	}
	if completed.GetRepeatCount() > 1 {
		round := strconv.FormatInt(completed.GetJobsTotal(), 10)
		job := &testingv1.RunJob{WorkspaceId: ws, InvocationId: invocationID, Kind: "bucketing", Round: completed.GetJobsTotal()}
		data, _ := proto.Marshal(job)
		subject, err := events.TestBucketingJobSubject(ws, invocationID, round)
		if err != nil {
			return true, err
		}
		bucketing := Message{Subject: subject, ID: invocationID + "#bucketing#" + round, Data: data}
		if err := a.Jobs.Enqueue(ctx, 1, func(int) (Message, error) { return bucketing, nil }); err != nil {
			return true, err
		}
	}
	return true, nil
}

// countersTotal reads the outcome from the progress counters when they
// are exact: runners count a result only when the stream stored it anew,
// so no run is counted twice, and a count can only fall short (a runner
// that died before adding its last results). Counters that add up to
// every run of a never-resubmitted invocation are therefore exact; any
// other case is counted from the results.
func (a *App) countersTotal(ctx context.Context, inv *testingv1.Invocation) (passed, failed int64, exact bool, err error) {
	if len(inv.GetResubmissions()) > 0 {
		return 0, 0, false, nil
	}
	total := int64(len(inv.GetTests())) * int64(max(inv.GetRepeatCount(), 1))
	done, passed, err := a.Counts(ctx, inv.GetInvocationId(), 1)
	if err != nil || done != total || passed > done {
		return 0, 0, false, err
	}
	return passed, done - passed, true, nil
}

// countOutcomes counts the passed and failed runs over each run's newest
// result. It reads every result of the invocation in stream order, headers
// only (decoding 250,000 results, or asking the server for each run's
// last one, made completing a large invocation take seconds); a later
// result of a run replaces an earlier one.
func (a *App) countOutcomes(ctx context.Context, inv *testingv1.Invocation) (passed, failed int64, err error) {
	expected := ExpectedAttempts(inv)
	total := len(inv.GetTests()) * int(max(inv.GetRepeatCount(), 1))
	outcome := make([]byte, total) // per run: 0 none yet, 'p' passed, 'f' failed
	runs, err := events.RunsOfInvocation(inv.GetWorkspaceId(), inv.GetInvocationId())
	if err != nil {
		return 0, 0, err
	}
	err = a.scan(ctx, inv.GetWorkspaceId(), runs, a.Runs.EachHeader, func(m Record) error {
		runID := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]
		idx, err := domain.RunIndex(inv.GetInvocationId(), runID)
		if err != nil || idx >= total {
			return nil
		}
		status, attempt := m.Header.Get(events.HeaderRunStatus), m.Header.Get(events.HeaderRunAttempt)
		n, convErr := strconv.Atoi(attempt)
		if status == "" || convErr != nil { // a result stored without them: read it whole
			rec, err := a.Runs.At(ctx, m.Seq)
			if err != nil {
				return err
			}
			run, err := runOf(esproto.Decode(rec))
			if err != nil {
				return err
			}
			status, n = run.GetStatus(), int(run.GetAttempt())
		}
		if int32(n) < max(expected[runID], 1) {
			return nil
		}
		switch status {
		case domain.RunPassed:
			outcome[idx] = 'p'
		case domain.RunFailed:
			outcome[idx] = 'f'
		}
		return nil
	})
	for _, o := range outcome {
		switch o {
		case 'p':
			passed++
		case 'f':
			failed++
		}
	}
	return passed, failed, err
}

// missedAfter is how long after a round's event the sweeper takes its
// jobs for never queued: well past the enqueuer's redeliveries of an event
// whose handling failed or whose process died (AckWait, back-off).
const missedAfter = 30 * time.Second

// queueMissedRound queues the running round of an invocation whose jobs
// the enqueuer has not recorded queued missedAfter after the round's event
// (last, the invocation's last) was stored, as the enqueuer would: a
// running invocation whose jobs are never queued waits for good, whatever
// lost them (the cluster tier saw its event acknowledged by the enqueuer,
// with no job queued, as a node of the store was lost). The job ids make
// a round queued twice run once.
func (a *App) queueMissedRound(ctx context.Context, invocationID string, last Record) error {
	if a.Now().Sub(last.Time) < missedAfter {
		return nil
	}
	if last.Type != events.TypeInvocationCreated && last.Type != events.TypeInvocationResubmitted {
		return nil // a load step's, queued by its own checks
	}
	if a.WritesHeld != nil && a.WritesHeld() != nil {
		return nil // the enqueuer is held too
	}
	// Said: a round the enqueuer missed, or one it is far behind on.
	a.Log.WarnContext(ctx, "completion sweeper: a round not queued in time; queuing it",
		"invocation", invocationID, "event", last.Type, "seq", last.Seq, "stored", last.Time, "within", missedAfter)
	return a.enqueue(ctx, last, func() {})
}

// RunCompletionSweeper checks running invocations every interval, so one
// whose last runner died between its last ack and completing it still
// completes. Runners check the invocations they work on far sooner.
func (a *App) RunCompletionSweeper(ctx context.Context, interval time.Duration) {
	tick.Every(ctx, interval, func() {
		docs, err := a.ReadModel.Running(ctx)
		if err != nil {
			a.Log.Warn("completion sweeper", "err", err)
			return
		}
		for _, d := range docs {
			if _, err := a.CheckCompletion(ctx, d.WorkspaceID, d.ID); err != nil && ctx.Err() == nil {
				a.Log.Warn("completion check", "invocation", d.ID, "err", err)
			}
		}
	})
}
