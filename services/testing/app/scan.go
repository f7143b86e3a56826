package app

import "context"

// MaxScans bounds the reads of the runs log one process makes at once,
// half of them for one workspace. Each read holds a consumer and a batch
// of runs in flight, and one whose reader reads nothing holds them for as
// long as the service waits for it: 95 such reads of one workspace once
// flooded the process's connection until it dropped, and every
// workspace's reads with it. A read waits its turn for as long as its
// caller waits.
const MaxScans = 16

// scan reads filter's records of the runs log with each (RunsLog.EachLast
// or EachHeader) in one of workspace's scan slots.
func (a *App) scan(ctx context.Context, workspace, filter string,
	each func(context.Context, string, func(Record) error) error, fn func(Record) error) error {
	if err := a.Scans.Acquire(ctx, workspace); err != nil {
		return err
	}
	defer a.Scans.Release(workspace)
	return each(ctx, filter, fn)
}
