package memory

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/eventlog/memlog"
	"github.com/voiceai-platform/voiceai/pkg/fifo"
	"github.com/voiceai-platform/voiceai/services/testing/app"
)

// Ports are the testing app's ports in memory, for tests; the
// returned parts let a test play the runners (take jobs, add counts) and
// the invocation log's feed.
type Ports struct {
	Testing *memlog.Store
	Agents  *memlog.Store
	Runs    *RunsLog
	Jobs    *JobQueue
	Counts  *Counters
	Feed    *Feed
}

// NewPorts makes empty memory ports.
func NewPorts(now func() time.Time) *Ports {
	jobs := NewJobQueue()
	jobs.Now = now
	return &Ports{Testing: memlog.New(), Agents: memlog.New(), Runs: NewRunsLog(now),
		Jobs: jobs, Counts: NewCounters(), Feed: NewFeed()}
}

// Ports are m as app.New takes them.
func (m *Ports) Ports() app.Ports {
	return app.Ports{Testing: m.Testing, Agents: m.Agents, Runs: m.Runs, Jobs: m.Jobs, Counts: m.Counts, Invocations: m.Feed}
}

func recordOf(seq uint64, m app.Message, at time.Time) app.Record {
	h := eventlog.Header{}
	maps.Copy(h, m.Header)
	return app.Record{Seq: seq, Subject: m.Subject, Header: h, Data: append([]byte(nil), m.Data...), Time: at,
		CommandID: m.ID, Type: h.Get(events.HeaderEventType)}
}

// RunsLog is app.RunsLog in memory; ids are remembered forever.
type RunsLog struct {
	now  func() time.Time
	mu   sync.Mutex
	recs []app.Record
	ids  map[string]bool
}

// NewRunsLog is an empty runs log stamping records with now.
func NewRunsLog(now func() time.Time) *RunsLog {
	return &RunsLog{now: now, ids: map[string]bool{}}
}

func (l *RunsLog) Publish(_ context.Context, m app.Message) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m.ID != "" && l.ids[m.ID] {
		return true, nil
	}
	l.ids[m.ID] = true
	l.recs = append(l.recs, recordOf(uint64(len(l.recs)+1), m, l.now()))
	return false, nil
}

func (l *RunsLog) Last(_ context.Context, subject string) (app.Record, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.recs) - 1; i >= 0; i-- {
		if l.recs[i].Subject == subject {
			return l.recs[i], true, nil
		}
	}
	return app.Record{}, false, nil
}

func (l *RunsLog) At(_ context.Context, seq uint64) (app.Record, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if seq == 0 || seq > uint64(len(l.recs)) {
		return app.Record{}, fmt.Errorf("runs log: no record at %d", seq)
	}
	return l.recs[seq-1], nil
}

// matching is a copy of the records matching filter, in order.
func (l *RunsLog) matching(filter string) []app.Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []app.Record
	for _, r := range l.recs {
		if events.SubjectMatches(filter, r.Subject) {
			out = append(out, r)
		}
	}
	return out
}

func (l *RunsLog) EachLast(_ context.Context, filter string, fn func(app.Record) error) error {
	recs := l.matching(filter)
	last := map[string]uint64{}
	for _, r := range recs {
		last[r.Subject] = r.Seq
	}
	for _, r := range recs {
		if last[r.Subject] == r.Seq {
			if err := fn(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// EachHeader leaves the data out, as the JetStream adapter does.
func (l *RunsLog) EachHeader(_ context.Context, filter string, fn func(app.Record) error) error {
	for _, r := range l.matching(filter) {
		r.Data = nil
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// JobQueue is app.JobQueue in memory; ids are remembered forever. Its
// RunQueues are the runners' view of it (runner.go).
type JobQueue struct {
	mu   sync.Mutex
	jobs []app.Message // waiting, in order
	ids  map[string]bool

	out       map[string]app.Message // taken by a runner, not done, by id
	delivered map[string]uint64      // deliveries so far, by id
	stored    map[string]time.Time   // when each was queued, by id
	notBefore map[string]time.Time   // a job given back waits until then
	dropped   []app.Message          // taken off undone
	queued    []func()               // runners told of new jobs
	// Now is the queue's clock (time.Now unless set).
	Now func() time.Time
}

// NewJobQueue is an empty queue.
func NewJobQueue() *JobQueue {
	return &JobQueue{ids: map[string]bool{}, out: map[string]app.Message{}, delivered: map[string]uint64{}, notBefore: map[string]time.Time{},
		stored: map[string]time.Time{}, Now: time.Now}
}

func (q *JobQueue) Enqueue(_ context.Context, n int, job func(int) (app.Message, error)) error {
	for i := range n {
		m, err := job(i)
		if err != nil {
			return err
		}
		q.mu.Lock()
		if !q.ids[m.ID] {
			q.ids[m.ID] = true
			q.stored[m.ID] = q.Now()
			q.jobs = append(q.jobs, m)
		}
		q.mu.Unlock()
	}
	q.tellQueued()
	return nil
}

// Purge drops the waiting jobs and those runners hold, as a purge of the
// stream does: a runner's word on a purged job is lost.
func (q *JobQueue) Purge(_ context.Context, filter string) error {
	q.Take(filter)
	q.mu.Lock()
	defer q.mu.Unlock()
	for id, j := range q.out {
		if events.SubjectMatches(filter, j.Subject) {
			delete(q.out, id)
		}
	}
	return nil
}

func (q *JobQueue) Waiting(_ context.Context, filter string) (bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, j := range q.jobs {
		if events.SubjectMatches(filter, j.Subject) {
			return true, nil
		}
	}
	for _, j := range q.out {
		if events.SubjectMatches(filter, j.Subject) {
			return true, nil
		}
	}
	return false, nil
}

// Take removes and returns the jobs matching filter, in queue order: a
// runner that did them.
func (q *JobQueue) Take(filter string) []app.Message {
	q.mu.Lock()
	defer q.mu.Unlock()
	var taken, kept []app.Message
	for _, j := range q.jobs {
		if events.SubjectMatches(filter, j.Subject) {
			taken = append(taken, j)
		} else {
			kept = append(kept, j)
		}
	}
	q.jobs = kept
	return taken
}

// Counters is app.Counters in memory.
type Counters struct {
	mu     sync.Mutex
	counts map[string]int64
}

// NewCounters are counters all at 0.
func NewCounters() *Counters { return &Counters{counts: map[string]int64{}} }

func (c *Counters) Count(_ context.Context, subject string) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[subject], nil
}

// Add adds n to subject's count, as a runner does.
func (c *Counters) Add(subject string, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[subject] += n
}

// Feed is app.InvocationFeed in memory: one durable reader over
// the events appended to it. A failed event goes to the back of the
// line and is delivered again.
type Feed struct {
	pending *fifo.Queue[app.Record]
}

// NewFeed is a feed with nothing to deliver.
func NewFeed() *Feed { return &Feed{pending: fifo.New[app.Record](0)} }

// Append adds an event to deliver.
func (f *Feed) Append(rec app.Record) { f.pending.Push(rec) }

func (f *Feed) Follow(ctx context.Context, handle func(context.Context, app.Record, func()) error) error {
	retry := time.NewTicker(10 * time.Millisecond) // a failed event's next try
	defer retry.Stop()
	for {
		next := f.pending.TakeUpTo(nil, 1)
		if len(next) == 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-f.pending.Ready():
			case <-retry.C:
			}
			continue
		}
		rec := next[0]
		if err := handle(ctx, rec, func() {}); err != nil {
			f.pending.Push(rec)
			select {
			case <-ctx.Done():
				return nil
			case <-retry.C:
			}
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// Snapshot is a copy of the jobs on the queue, in order.
func (q *JobQueue) Snapshot() []app.Message {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]app.Message(nil), q.jobs...)
}
