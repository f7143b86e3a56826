package app

import (
	"context"
	"errors"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/aggregate"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/tracing"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// RunEnqueuer queues run jobs for every invocation_created and
// invocation_resubmitted event whose round is still running, until ctx
// ends. The feed is durable, so it survives crashes; job ids make
// re-queuing harmless.
func (a *App) RunEnqueuer(ctx context.Context) error {
	return a.Feed.Follow(ctx, func(ctx context.Context, rec Record, working func()) error {
		// What is logged about the invocation names the invoking request's trace.
		mctx := tracing.Extract(ctx, rec.Header.Get(events.HeaderTraceparent))
		if err := a.enqueue(mctx, rec, working); err != nil {
			a.Log.ErrorContext(mctx, "enqueuer: queue runs", "subject", rec.Subject, "err", err)
			return err
		}
		return nil
	})
}

func (a *App) enqueue(ctx context.Context, rec Record, working func()) error {
	switch rec.Type {
	case events.TypeInvocationCreated, events.TypeInvocationResubmitted, events.TypeLoadStepCompleted:
	default:
		// No runs to queue: a cancel, a completion, or a type this
		// version does not know (a newer one's, mid-upgrade), which it
		// could not read however often it were delivered again.
		return nil
	}
	msg, err := esproto.Decode(rec)
	if err != nil {
		// Bytes no retry can read: retried, each would hold one of the
		// feed's few places in hand for good, and enough of them every
		// workspace's invocations.
		a.Log.ErrorContext(ctx, "enqueuer: an invocation event that cannot be read is passed by", "subject", rec.Subject, "type", rec.Type, "err", err)
		return nil
	}
	traceparent := rec.Header.Get(events.HeaderTraceparent)
	switch ev := msg.(type) {
	case *testingv1.InvocationCreated:
		inv := ev.GetInvocation()
		if inv.GetLoad() != nil {
			return a.queueLoadStep(ctx, traceparent, inv)
		}
		if runs, err := a.stillRuns(ctx, rec, inv, 1); err != nil || !runs {
			return err
		}
		total := len(inv.GetTests()) * int(max(inv.GetRepeatCount(), 1))
		per := domain.RunsPerJob(total)
		jobs := (total + per - 1) / per
		if err := a.publishJobs(ctx, traceparent, working, inv, jobs, func(i int) (string, int, int) {
			return domain.RunID(inv.GetInvocationId(), i*per), i * per, min(per, total-i*per)
		}, 1); err != nil {
			return err
		}
		return a.markQueued(ctx, rec, inv, jobs)
	case *testingv1.InvocationResubmitted:
		inv := ev.GetInvocation()
		rs := inv.GetResubmissions()
		last := rs[len(rs)-1]
		if runs, err := a.stillRuns(ctx, rec, inv, last.GetAttempt()); err != nil || !runs {
			return err
		}
		if err := a.publishJobs(ctx, traceparent, working, inv, len(last.GetRunIds()), func(i int) (string, int, int) {
			id := last.GetRunIds()[i]
			idx, _ := domain.RunIndex(inv.GetInvocationId(), id)
			return id, idx, 1
		}, last.GetAttempt()); err != nil {
			return err
		}
		return a.markQueued(ctx, rec, inv, len(last.GetRunIds()))
	case *testingv1.LoadStepCompleted:
		return a.queueLoadStep(ctx, traceparent, ev.GetInvocation())
	}
	return nil
}

// markQueued records the round of the event rec queued, and says so:
// one line per round, by which an invocation is followed from its request
// to its jobs.
func (a *App) markQueued(ctx context.Context, rec Record, inv *testingv1.Invocation, jobs int) error {
	if err := a.MarkQueued(ctx, inv.GetWorkspaceId(), inv.GetInvocationId(), inv.GetJobsTotal()); err != nil {
		return err
	}
	a.Log.InfoContext(ctx, "enqueuer: round queued", "invocation", inv.GetInvocationId(), "event", rec.Type, "seq", rec.Seq,
		"jobs", jobs, "jobs_total", inv.GetJobsTotal())
	return nil
}

// stillRuns re-reads the invocation an event carries: the event may be
// older than a cancel, whose purge would miss the jobs queued now, or
// than a newer round. A round no longer running queues nothing.
//
// The event in hand (rec) is stored, so a read older than it is a stale
// answer (aggregate.ErrStaleRead), not the invocation's, and is asked
// again later rather than taken for "not running", which would settle the
// event with no job queued and leave the invocation running for good.
// Only an event older than staleReadsFor whose invocation still reads
// stale is passed by: its stream was made anew without it (a restore).
func (a *App) stillRuns(ctx context.Context, rec Record, inv *testingv1.Invocation, attempt int32) (bool, error) {
	cur, seq, err := a.Invocations.GetSince(ctx, inv.GetWorkspaceId(), inv.GetInvocationId(), rec.Seq)
	if errors.Is(err, aggregate.ErrStaleRead) && a.Now().Sub(rec.Time) > staleReadsFor {
		a.Log.ErrorContext(ctx, "enqueuer: an invocation event whose invocation does not read is passed by",
			"subject", rec.Subject, "seq", rec.Seq, "read_seq", seq, "err", err)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !RunsRound(cur, attempt) {
		// Rare (a cancel or a new round within moments of the event): said,
		// so that an invocation left running without jobs can be traced.
		a.Log.InfoContext(ctx, "enqueuer: the round is no longer running; no jobs queued",
			"subject", rec.Subject, "seq", rec.Seq, "status", cur.GetStatus(), "attempt", attempt, "newest_attempt", NewestAttempt(cur))
		return false, nil
	}
	return true, nil
}

// staleReadsFor is how long an event's invocation may read stale before
// the event is taken for one of a stream made anew without it.
const staleReadsFor = 10 * time.Minute

// MayReadStale reports whether a read that does not find the invocation
// of a job queued at queued may be a stale one (a store between leaders)
// rather than its absence: the invocation was stored before its job, so
// it may while the job is younger than staleReadsFor. Its runner asks
// again then, and takes the invocation for gone only after.
func (a *App) MayReadStale(queued time.Time) bool {
	return a.Now().Sub(queued) < staleReadsFor
}

// publishJobs queues n jobs, telling the feed the event is still being
// worked on while a large invocation is queued. job(i) is the i-th job's
// first run (its id and index) and its number of runs.
func (a *App) publishJobs(ctx context.Context, traceparent string, working func(), inv *testingv1.Invocation, n int,
	job func(int) (string, int, int), attempt int32) error {
	repeat := int(max(inv.GetRepeatCount(), 1))
	lastBeat := a.Now()
	return a.Jobs.Enqueue(ctx, n, func(i int) (Message, error) {
		id, idx, runs := job(i)
		data, _ := proto.Marshal(&testingv1.RunJob{WorkspaceId: inv.GetWorkspaceId(), InvocationId: inv.GetInvocationId(), Kind: "run",
			RunId: id, TestIndex: int32(idx / repeat), RepeatIndex: int32(idx % repeat), Attempt: attempt, RunCount: int32(runs)})
		subject, err := events.TestJobSubject(inv.GetWorkspaceId(), inv.GetInvocationId(), id)
		if err != nil {
			return Message{}, err
		}
		m := Message{Subject: subject, ID: id + "#" + strconv.Itoa(int(attempt)), Data: data}
		if traceparent != "" {
			m.Header = map[string][]string{events.HeaderTraceparent: {traceparent}} // the runs continue the invoking request's trace
		}
		if now := a.Now(); now.Sub(lastBeat) > 10*time.Second {
			working()
			lastBeat = now
		}
		return m, nil
	})
}
