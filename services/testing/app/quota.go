package app

import (
	"context"
	"fmt"
	"time"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
)

// Limits bound what one workspace may queue and how long runs are kept;
// a zero limit is no limit.
//
// Runs count as planned: every copy of a test id in one run-tests, times
// repeat_count, is a run (duplicates are accepted, as the public API
// accepts them, and cost what they run).
//
// The quotas are read from the read model, not taken under a lock: two
// requests of one workspace checked at the same moment may both pass, so
// a workspace may go over a quota by what one request adds (one more
// active invocation, at most 250,000 runs more).
type Limits struct {
	// MaxActiveInvocations bounds a workspace's invocations queued or
	// running at once.
	MaxActiveInvocations int
	// MaxQueuedRuns bounds a workspace's runs not yet finished: those of
	// its active invocations plus the ones a request adds.
	MaxQueuedRuns int64
	// RunRetention is how long run results are kept (the runs log's
	// maximum age); an invocation older than it answers InvocationExpired.
	RunRetention time.Duration
	// MaxLoadCallers bounds one load test step's simultaneous callers
	// (0: domain.LoadDefaultMaxCallers).
	MaxLoadCallers int
}

// Quota names, as refusals and their metric name them.
const (
	QuotaActiveInvocations = "active_invocations"
	QuotaQueuedRuns        = "queued_runs"
)

// checkQuotas refuses a request that would make the workspace's active
// invocations one more and its queued runs runs more over the limits.
func (a *App) checkQuotas(ctx context.Context, ws string, runs int64) error {
	l := a.Limits
	if l.MaxActiveInvocations <= 0 && l.MaxQueuedRuns <= 0 {
		return nil
	}
	// The first quota bounds the read: one more than it allows tells the
	// request is over. Without it, the queued runs are counted over every
	// active invocation (which the second quota bounds in practice).
	limit := l.MaxActiveInvocations
	if limit <= 0 {
		limit = 1 << 20
	}
	active, err := a.ReadModel.Active(ctx, ws, limit)
	if err != nil {
		return err
	}
	if l.MaxActiveInvocations > 0 && len(active)+1 > l.MaxActiveInvocations {
		return a.refuse(QuotaActiveInvocations, "active invocations (queued or running)", int64(l.MaxActiveInvocations), int64(len(active)+1))
	}
	if l.MaxQueuedRuns <= 0 {
		return nil
	}
	// Every run of the newest attempt of each active invocation, at most:
	// when that stays within the quota, no counter needs reading.
	planned := runs
	for _, s := range active {
		planned += s.AttemptRuns
	}
	if planned <= l.MaxQueuedRuns {
		return nil
	}
	// Over at most: take off the runs already done.
	queued := runs
	for _, s := range active {
		done, _, err := a.Counts(ctx, s.ID, s.Attempt)
		if err != nil {
			return err
		}
		queued += max(s.AttemptRuns-done, 0)
	}
	if queued > l.MaxQueuedRuns {
		return a.refuse(QuotaQueuedRuns, "queued runs (not yet finished)", l.MaxQueuedRuns, queued)
	}
	return nil
}

func (a *App) refuse(quota, what string, limit, would int64) error {
	if a.QuotaRefused != nil {
		a.QuotaRefused(quota)
	}
	return apperr.QuotaExceeded(what, limit, would)
}

// Expired reports whether inv is older than the run retention: its
// oldest runs may have been deleted from the runs log.
func (a *App) Expired(inv *testingv1.Invocation) bool {
	r := a.Limits.RunRetention
	return r > 0 && a.Now().Sub(time.Unix(inv.GetCreatedAtUnix(), 0)) > r
}

// Invocation reads an invocation whose runs are kept: an older one
// answers apperr.InvocationExpired (listings still show its summary).
func (a *App) Invocation(ctx context.Context, ws, id string) (*testingv1.Invocation, error) {
	inv, _, err := a.Invocations.Get(ctx, ws, id)
	if err != nil {
		return nil, err
	}
	if a.Expired(inv) {
		return nil, apperr.InvocationExpired(RetentionText(a.Limits.RunRetention))
	}
	return inv, nil
}

// RetentionText says a retention in days when it is whole days.
func RetentionText(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d%day == 0 && d == day:
		return "1 day"
	case d%day == 0:
		return fmt.Sprintf("%d days", d/day)
	}
	return d.String()
}
