package memory

import (
	"context"
	"strings"
	"time"

	events "github.com/voiceai-platform/voiceai/proto-events"
	"github.com/voiceai-platform/voiceai/services/testing/app"
)

// RunnerPorts are a runner's ports over m: its job queue seen as the
// invocations' queues, its runs log and its counters.
func (m *Ports) RunnerPorts() app.RunnerPorts {
	return app.RunnerPorts{Queues: &RunQueues{q: m.Jobs}, Results: &ResultStore{Log: m.Runs}, Counts: m.Counts}
}

// RunQueues is app.RunQueues over a JobQueue: every job of an invocation
// (testjobs.<ws>.<inv>.…) is on its queue; a job given back waits out
// its delay; nothing is delivered again on its own (no ack wait).
type RunQueues struct{ q *JobQueue }

// Refresh has nothing to list again: Queues reads the jobs as they are.
func (r *RunQueues) Refresh(context.Context, func(ws, inv string) int) error { return nil }

// Listed is now: the queues are never stale.
func (r *RunQueues) Listed() time.Time { return time.Now() }

// Queues are the invocations with jobs waiting now, in the order of their
// first job.
func (r *RunQueues) Queues() []app.RunQueue {
	q := r.q
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []app.RunQueue
	at := map[[2]string]int{}
	now := time.Now()
	for _, j := range q.jobs {
		ws, inv, ok := queueOf(j.Subject)
		if !ok || now.Before(q.notBefore[j.ID]) {
			continue
		}
		k := [2]string{ws, inv}
		if i, seen := at[k]; seen {
			out[i].Waiting++
			continue
		}
		at[k] = len(out)
		out = append(out, app.RunQueue{Workspace: ws, Invocation: inv, Waiting: 1})
	}
	return out
}

// Take takes up to n of the invocation's jobs waiting now.
func (r *RunQueues) Take(_ context.Context, rq app.RunQueue, n int) ([]app.TakenJob, error) {
	q := r.q
	q.mu.Lock()
	defer q.mu.Unlock()
	var taken []app.TakenJob
	kept := q.jobs[:0:0]
	now := time.Now()
	for _, j := range q.jobs {
		ws, inv, ok := queueOf(j.Subject)
		if len(taken) < n && ok && ws == rq.Workspace && inv == rq.Invocation && !now.Before(q.notBefore[j.ID]) {
			q.delivered[j.ID]++
			q.out[j.ID] = j
			taken = append(taken, &takenJob{q: q, m: j, delivered: q.delivered[j.ID], queued: q.stored[j.ID]})
			continue
		}
		kept = append(kept, j)
	}
	q.jobs = kept
	return taken, nil
}

// Notify calls queued after every Enqueue.
func (r *RunQueues) Notify(queued func()) (func(), error) {
	q := r.q
	q.mu.Lock()
	defer q.mu.Unlock()
	q.queued = append(q.queued, queued)
	i := len(q.queued) - 1
	return func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		q.queued[i] = nil
	}, nil
}

func (q *JobQueue) tellQueued() {
	q.mu.Lock()
	fns := append([]func(){}, q.queued...)
	q.mu.Unlock()
	for _, fn := range fns {
		if fn != nil {
			fn()
		}
	}
}

// queueOf is the workspace and invocation of a job subject.
func queueOf(subject string) (ws, inv string, ok bool) {
	parts := strings.SplitN(subject, ".", 4)
	if len(parts) < 4 || parts[0] != "testjobs" {
		return "", "", false
	}
	return parts[1], parts[2], true
}

// Out is how many jobs runners hold (taken, not done).
func (q *JobQueue) Out() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.out)
}

// Dropped are the jobs runners took off their queue undone.
func (q *JobQueue) Dropped() []app.Message {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]app.Message(nil), q.dropped...)
}

// Deliveries is how many times the job with id was delivered.
func (q *JobQueue) Deliveries(id string) uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.delivered[id]
}

// takenJob is a job a runner holds.
type takenJob struct {
	q         *JobQueue
	m         app.Message
	delivered uint64
	queued    time.Time
}

func (j *takenJob) Subject() string     { return j.m.Subject }
func (j *takenJob) Data() []byte        { return j.m.Data }
func (j *takenJob) Traceparent() string { return j.m.Header.Get(events.HeaderTraceparent) }
func (j *takenJob) Delivered() uint64   { return j.delivered }
func (j *takenJob) Queued() time.Time   { return j.queued }
func (j *takenJob) Working() error      { return nil }

func (j *takenJob) Done() error { j.end(false, 0, false); return nil }

func (j *takenJob) DoneConfirmed(context.Context) error { return j.Done() }

func (j *takenJob) Retry(delay time.Duration) error { j.end(true, delay, false); return nil }

func (j *takenJob) Drop() error { j.end(false, 0, true); return nil }

// end takes the job from the runner: back on its queue after delay
// (retry), or off it (dropped or done). A job purged meanwhile stays gone.
func (j *takenJob) end(retry bool, delay time.Duration, dropped bool) {
	q := j.q
	q.mu.Lock()
	if _, ok := q.out[j.m.ID]; !ok {
		q.mu.Unlock()
		return
	}
	delete(q.out, j.m.ID)
	switch {
	case retry:
		q.notBefore[j.m.ID] = time.Now().Add(delay)
		q.jobs = append(q.jobs, j.m)
	case dropped:
		q.dropped = append(q.dropped, j.m)
	}
	q.mu.Unlock()
	if retry {
		q.tellQueued()
	}
}

// ResultStore is app.ResultStore over a runs log: a result is stored at
// once. Fail, when set, refuses a result with its error (a log that
// failed).
type ResultStore struct {
	Log  *RunsLog
	Fail func(app.Message) error
}

func (s *ResultStore) Store(ctx context.Context, m app.Message) (app.StoredResult, error) {
	if s.Fail != nil {
		if err := s.Fail(m); err != nil {
			return stored{err: err}, nil
		}
	}
	dup, err := s.Log.Publish(ctx, m)
	return stored{dup: dup, err: err}, nil
}

type stored struct {
	dup bool
	err error
}

func (s stored) Wait() (bool, error) { return s.dup, s.err }

// Incr adds n to subject's count, as app.CounterAdder.
func (c *Counters) Incr(_ context.Context, subject string, n int64) error {
	c.Add(subject, n)
	return nil
}
