package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/singleflight"
	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/aggregate"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/pkg/ids"
	"github.com/voiceai-platform/voiceai/pkg/tick"
	"github.com/voiceai-platform/voiceai/pkg/tracing"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
	"github.com/voiceai-platform/voiceai/services/testing/model"
)

// Worker takes run jobs from the invocations' queues and executes them,
// about Concurrency at a time. Results go to the runs log; the progress
// counters tell the worker that finishes an invocation's last run to
// complete it. It drives the App and the runner's ports app declares
// (adapters.NewRunnerPorts on JetStream, memory.Ports.RunnerPorts in tests).
type Worker struct {
	App         *app.App
	Ports       app.RunnerPorts
	Exec        *Executor
	Concurrency int
	// Headroom is how many jobs beyond Concurrency the worker runs for
	// workspaces other than the busiest (default a quarter of Concurrency,
	// at least 1): see app.Scheduler.
	Headroom int
	// AckWait is how long a job may go without a heartbeat before its
	// queue delivers it to another worker (the queues' own, given the
	// same value).
	AckWait time.Duration
	ID      string
	Log     *slog.Logger
	// MaxAttempts is how many deliveries a job gets before it is given up
	// (default 10); RetryDelay is how long a failed job waits (default 1s).
	MaxAttempts uint64
	RetryDelay  time.Duration
	// Metrics, when set, counts the runs and model usage.
	Metrics *Metrics
	// MaxLoadCallers bounds the endpoint concurrency of a load test's
	// step on this worker (VOICEAI_MAX_LOAD_CALLERS; 0: the step's
	// callers as the testing service accepted them).
	MaxLoadCallers int
	// Hold, when set, is asked before jobs are taken: while it answers an
	// error (the all-in-one's disk guard, its disk nearly full), no job
	// is taken and the queued ones wait, stored, on their queues.
	Hold func() error

	mu       sync.Mutex
	invs     map[string]cachedInvocation
	invReads singleflight.Group
	defs     map[uint64]domain.TestInput

	stored  chan storing         // results being stored, in order
	touched map[string]*progress // invocations with stored results since the last check
	watch   map[string]watched   // invocations checked for completion (check loop only)
}

// storing is a run result on its way to the runs log (ack set), or, with
// ack nil, the end of a job's results: the job is done once the log
// has all of them.
type storing struct {
	job     *jobAck
	ack     app.StoredResult
	ws      string
	inv     string
	attempt int32
	counted bool // a run's result, which counts once stored (not a failure notice)
	passed  bool
}

// jobAck is a job whose results are being stored; failed when one of
// them could not be (the job is then redelivered).
type jobAck struct {
	msg    app.TakenJob
	trace  string // the job's traceparent, for log lines
	failed bool
}

// progress is what the checker adds to an invocation's counters, per
// attempt (each resubmission counts its runs afresh).
type progress struct {
	ws     string
	trace  string              // a traceparent of the invocation's jobs, for log lines
	counts map[int32]*[2]int64 // attempt -> done, passed
}

type cachedInvocation struct {
	inv  *testingv1.Invocation
	read time.Time
}

// invocationFreshness bounds how stale a worker's view of an invocation
// (its cancellation) may be, in real time.
const invocationFreshness = time.Second

// listEvery is how often a busy worker lists the queues again; idleEvery
// how often an idle one does when no enqueuer told it of new jobs.
const (
	listEvery = 500 * time.Millisecond
	idleEvery = 2 * time.Second
)

// holdEvery is how often a held worker asks whether it may take jobs.
const holdEvery = time.Second

// Run works until ctx ends; jobs in progress finish first.
//
// Every invocation has a queue of its own (adapters.RunQueues); the
// worker takes jobs by app.Scheduler's rule, so no workspace's backlog
// delays another's runs. A worker takes only as many jobs as it has free
// slots, and heartbeats each job from the moment it holds it: a job
// buffered behind slow runs would otherwise outlive AckWait and be run
// twice.
func (w *Worker) Run(ctx context.Context) error {
	if w.Concurrency <= 0 {
		w.Concurrency = 8
	}
	if w.AckWait <= 0 {
		w.AckWait = 30 * time.Second
	}
	if w.ID == "" {
		w.ID = ids.New("wrk")
	}
	// A job delivered more often than MaxAttempts (its workers crashed, or
	// the platform kept failing) ends failed with that reason rather than
	// staying on the queue forever.
	if w.MaxAttempts == 0 {
		w.MaxAttempts = 10
	}
	if w.RetryDelay <= 0 {
		w.RetryDelay = time.Second
	}
	w.invs, w.defs = map[string]cachedInvocation{}, map[uint64]domain.TestInput{}
	w.stored, w.touched, w.watch = make(chan storing, 4096), map[string]*progress{}, map[string]watched{}
	sched := app.NewScheduler(w.Concurrency, w.Headroom)
	queues := w.Ports.Queues
	// wake: a slot was freed; notified: an enqueuer queued jobs.
	wake, notified := make(chan struct{}, 1), make(chan struct{}, 1)
	signal := func(c chan struct{}) {
		select {
		case c <- struct{}{}:
		default:
		}
	}
	stopNotices, err := queues.Notify(func() { signal(notified) })
	if err != nil {
		return err
	}
	defer stopNotices()
	storerDone := make(chan struct{})
	go func() { defer close(storerDone); w.ackStored() }()
	checkerStop, checkerDone := make(chan struct{}), make(chan struct{})
	go func() { defer close(checkerDone); w.checkLoop(checkerStop) }()
	defer func() { close(w.stored); <-storerDone; close(checkerStop); <-checkerDone }()

	var running sync.WaitGroup
	defer running.Wait()
	list, held := true, false
	for ctx.Err() == nil {
		if w.Hold != nil {
			if err := w.Hold(); err != nil {
				if !held {
					w.Log.Warn("runner: taking no jobs while held; they wait on their queues", "reason", err)
				}
				held = true
				select {
				case <-ctx.Done():
				case <-time.After(holdEvery):
				}
				continue
			}
			if held {
				w.Log.Info("runner: taking jobs again")
				held, list = false, true
			}
		}
		if list || time.Since(queues.Listed()) >= listEvery {
			if err := queues.Refresh(ctx, sched.Held); err != nil {
				if ctx.Err() == nil {
					w.Log.Warn("runner: listing the run queues", "err", err)
				}
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
				continue
			}
			list = false
		}
		q, n, ok := sched.Next(queues.Queues())
		if !ok {
			select {
			case <-ctx.Done():
			case <-wake:
			case <-notified:
				list = true
			case <-time.After(idleEvery):
				list = true
			}
			continue
		}
		jobs, err := queues.Take(ctx, q, n)
		if err != nil && ctx.Err() == nil {
			w.Log.Debug("runner: taking jobs", "invocation", q.Invocation, "err", err)
		}
		for _, m := range jobs {
			sched.Took(q.Workspace, q.Invocation)
			stop := w.heartbeat(m)
			running.Add(1)
			go func() {
				defer func() { stop(); sched.Done(q.Workspace, q.Invocation); signal(wake); running.Done() }()
				// A job finishes what it began when the worker stops; a load
				// job's callers start no further turn (stopping).
				jctx := model.WithSlot(context.WithValue(context.WithoutCancel(ctx), stoppingKey{}, ctx.Done()), func() func() {
					sched.Paused(q.Workspace)
					signal(wake)
					return func() { sched.Resumed(q.Workspace) }
				})
				w.handle(jctx, m)
			}()
		}
	}
	return nil
}

func (w *Worker) handle(ctx context.Context, m app.TakenJob) {
	delivered := m.Delivered()
	// The job continues the trace of the request that invoked the tests;
	// its results carry the job's span on, and its log lines name it.
	ctx, span := tracing.Start(ctx, m.Traceparent(), "run job", trace.SpanKindConsumer)
	defer span.End()
	if span.IsRecording() { // attributes made for a span nobody records are made for nothing, every run
		span.SetAttributes(attribute.Int("voiceai.delivery", int(delivered)))
	}
	if tp := tracing.Traceparent(ctx); tp != "" {
		ctx = httpx.WithTraceparentValue(ctx, tp)
	}
	var job testingv1.RunJob
	if err := proto.Unmarshal(m.Data(), &job); err != nil {
		w.Log.ErrorContext(ctx, "runner: undecodable job dropped", "subject", m.Subject(), "err", err)
		_ = m.Drop()
		return
	}
	if span.IsRecording() {
		span.SetAttributes(attribute.String("voiceai.invocation_id", job.GetInvocationId()), attribute.Int("voiceai.runs", int(max(job.GetRunCount(), 1))))
	}
	if delivered > w.MaxAttempts {
		w.giveUp(ctx, m, &job, delivered)
		return
	}
	if job.GetKind() == domain.JobLoad {
		if err := w.load(ctx, m, &job); err != nil {
			w.Log.WarnContext(ctx, "runner: load job failed, will retry", "subject", m.Subject(), "attempt", delivered, "err", err)
			_ = m.Retry(w.RetryDelay)
		}
		return
	}
	if job.GetKind() == "bucketing" {
		if err := w.App.GroupResults(ctx, job.GetWorkspaceId(), job.GetInvocationId(), job.GetRound(), delivered); err != nil {
			w.Log.WarnContext(ctx, "runner: bucketing failed, will retry", "subject", m.Subject(), "err", err)
			_ = m.Retry(w.RetryDelay)
			return
		}
		_ = m.Done()
		return
	}
	if err := w.run(ctx, m, &job, delivered > 1); err != nil {
		w.Log.WarnContext(ctx, "runner: job failed, will retry", "subject", m.Subject(), "attempt", delivered, "err", err)
		_ = m.Retry(w.RetryDelay)
	}
}

// load plays a load test's job: its callers at once, then its samples
// stored, the job acked and the step checked. A redelivered job whose
// samples were stored is not played again.
func (w *Worker) load(ctx context.Context, m app.TakenJob, job *testingv1.RunJob) error {
	inv, err := w.invocation(ctx, job.GetWorkspaceId(), job.GetInvocationId(), 1)
	if err != nil {
		return err
	}
	load := inv.GetLoad()
	step := int(job.GetLoadStep())
	if load == nil || load.GetTest() == nil || step >= len(load.GetSteps()) {
		w.Log.ErrorContext(ctx, "runner: a load job of no load step dropped", "subject", m.Subject())
		_ = m.Drop()
		return nil
	}
	if inv.GetStatus() != domain.InvocationRunning {
		_ = m.Done() // cancelled: its callers do not call
		return nil
	}
	subject, err := events.LoadSamplesSubject(job.GetWorkspaceId(), job.GetInvocationId(), step, int(job.GetLoadJob()))
	if err != nil {
		_ = m.Drop()
		return nil
	}
	if _, found, err := w.App.Runs.Last(ctx, subject); err != nil {
		return err
	} else if found {
		return w.ackLoad(ctx, m, job)
	}
	pt := load.GetTest()
	def, err := w.definition(ctx, pt.GetTestStreamSeq())
	if err != nil {
		return err
	}
	limit := int(load.GetSteps()[step])
	if w.MaxLoadCallers > 0 {
		limit = min(limit, w.MaxLoadCallers)
	}
	s := w.Exec.Load(ctx, LoadJob{
		Run: Run{Invocation: inv, Test: pt, Definition: def, AgentConfig: inv.GetAgentConfigJson(), BranchID: inv.GetBranchId(),
			RunID: inv.GetInvocationId() + "-load", WorkerID: w.ID},
		Step: step, Job: int(job.GetLoadJob()), Callers: int(job.GetLoadCallers()), TurnsPerCaller: int(load.GetTurnsPerCaller()),
		Limit: limit, LimitScope: inv.GetInvocationId() + "#" + strconv.Itoa(step),
		Next: w.nextTurn(ctx, job.GetWorkspaceId(), job.GetInvocationId()),
	})
	return w.storeLoad(ctx, m, s)
}

// nextTurn tells a load job's callers, before each next turn, whether to
// play it: not once the load test was cancelled (the invocation read at
// most every half second, shared by the job's callers; a read that fails
// lets them go on), nor once the worker is stopping. A stopping worker's
// job stores the turns its callers played and counts the rest as failed,
// saying why, and ends: its turns are bounded, a load test's run of them
// is not (20 turns of 500 callers held a SIGTERM for minutes).
func (w *Worker) nextTurn(ctx context.Context, ws, id string) func() (bool, string) {
	stopping, _ := ctx.Value(stoppingKey{}).(<-chan struct{})
	c := &sharedCheck{every: 500 * time.Millisecond, now: time.Now, ask: func() bool {
		cur, _, err := w.App.Invocations.Get(ctx, ws, id)
		return err != nil || cur.GetStatus() == domain.InvocationRunning
	}}
	return func() (bool, string) {
		select {
		case <-stopping:
			return false, LoadStoppedReason
		default:
			return c.Wanted(), ""
		}
	}
}

// LoadStoppedReason counts the turns a stopping runner's load job did not
// play.
const LoadStoppedReason = "the runner stopped (it was shutting down) before these turns"

// stoppingKey keys a job's word that its worker is stopping (the worker's
// own context's Done): a job runs on, not cancelled, and asks it.
type stoppingKey struct{}

// storeLoad stores a load job's samples (once per job), acks the job and
// checks whether its step is done.
func (w *Worker) storeLoad(ctx context.Context, m app.TakenJob, s *testingv1.LoadSamples) error {
	msg, err := w.App.LoadSamplesMessage(ctx, s)
	if err != nil {
		return err
	}
	if _, err := w.App.Runs.Publish(ctx, msg); err != nil {
		return err
	}
	return w.ackLoad(ctx, m, &testingv1.RunJob{WorkspaceId: s.GetWorkspaceId(), InvocationId: s.GetInvocationId()})
}

func (w *Worker) ackLoad(ctx context.Context, m app.TakenJob, job *testingv1.RunJob) error {
	if err := m.DoneConfirmed(ctx); err != nil {
		return err
	}
	if _, err := w.App.CheckLoadStep(ctx, job.GetWorkspaceId(), job.GetInvocationId()); err != nil {
		// The sweeper checks again; nothing is lost.
		w.Log.WarnContext(ctx, "runner: load step check", "invocation", job.GetInvocationId(), "err", err)
	}
	return nil
}

// givenUpInvocation reads the invocation of a job given up, whose
// failures need its tests (a run's) or its turns per caller (a load
// job's): a job of no invocation is dropped, nothing reading them; one
// whose invocation does not read now, or may read stale (not found, the
// job queued moments ago), is given up again later.
func (w *Worker) givenUpInvocation(ctx context.Context, m app.TakenJob, job *testingv1.RunJob, attempt int32) (*testingv1.Invocation, bool) {
	inv, err := w.invocation(ctx, job.GetWorkspaceId(), job.GetInvocationId(), attempt)
	if errors.Is(err, apperr.InvocationNotFound) && !w.App.MayReadStale(m.Queued()) {
		w.Log.ErrorContext(ctx, "runner: a given-up job of no invocation dropped", "subject", m.Subject())
		_ = m.Drop()
		return nil, false
	}
	if err != nil {
		_ = m.Retry(w.RetryDelay)
		return nil, false
	}
	return inv, true
}

// giveUp ends a job delivered more than maxAttempts times: a run is
// recorded failed with the reason (unless a newer round has started),
// bucketing is recorded failed.
func (w *Worker) giveUp(ctx context.Context, m app.TakenJob, job *testingv1.RunJob, delivered uint64) {
	reason := fmt.Sprintf("The run was started %d times without finishing (its workers stopped or the platform failed); it was given up.", delivered-1)
	w.Log.ErrorContext(ctx, "runner: job given up", "subject", m.Subject(), "deliveries", delivered)
	if job.GetKind() == domain.JobLoad {
		// Its callers' turns count as failed, with the reason.
		s := &testingv1.LoadSamples{WorkspaceId: job.GetWorkspaceId(), InvocationId: job.GetInvocationId(), Step: job.GetLoadStep(),
			Job: job.GetLoadJob(), Callers: job.GetLoadCallers(), WorkerId: w.ID}
		inv, ok := w.givenUpInvocation(ctx, m, job, 1)
		if !ok {
			return
		}
		turns := int64(max(inv.GetLoad().GetTurnsPerCaller(), 1))
		why := fmt.Sprintf("The load job holding these callers was started %d times without finishing (its workers stopped or the platform failed); it was given up.", delivered-1)
		s.Failures = []*testingv1.LoadFailure{{Reason: why, Count: int64(job.GetLoadCallers()) * turns}}
		if err := w.storeLoad(ctx, m, s); err != nil {
			_ = m.Retry(w.RetryDelay)
		}
		return
	}
	if job.GetKind() == "bucketing" {
		if err := w.App.GiveUpGrouping(ctx, job.GetWorkspaceId(), job.GetInvocationId(), "Grouping the results failed on every attempt."); err != nil {
			_ = m.Retry(w.RetryDelay)
			return
		}
		_ = m.Done()
		return
	}
	// A job whose run id or subject is malformed never gets a result.
	first, err := domain.RunIndex(job.GetInvocationId(), job.GetRunId())
	if err == nil {
		_, err = events.RunSubject(job.GetWorkspaceId(), job.GetInvocationId(), job.GetRunId())
	}
	if err != nil {
		_ = m.Drop()
		return
	}
	// The runs' tests are the invocation's (a job names its first run's
	// test index, not its test): without it a result would name no test,
	// and its run's index for one.
	inv, ok := w.givenUpInvocation(ctx, m, job, job.GetAttempt())
	if !ok {
		return
	}
	repeat, keeps := int(max(inv.GetRepeatCount(), 1)), app.KeepsResult(inv, job.GetAttempt())
	err = w.storeRuns(ctx, m, job, first, int(max(job.GetRunCount(), 1)), true, func(idx int, runID string) (*testingv1.RunResult, error) {
		if !keeps {
			return nil, nil // of a round before the running one
		}
		now := w.App.Now().UnixMilli()
		res := &testingv1.RunResult{
			RunId: runID, InvocationId: job.GetInvocationId(), WorkspaceId: job.GetWorkspaceId(),
			TestIndex: int32(idx / repeat), RepeatIndex: int32(idx % repeat), Attempt: job.GetAttempt(),
			StartedAtUnixMs: now, FinishedAtUnixMs: now, WorkerId: w.ID, Status: domain.RunFailed,
			ConditionResult: domain.ConditionUnknown, Error: reason, RationaleSummary: reason, AgentResponsesJson: []byte("[]"),
		}
		if idx/repeat < len(inv.GetTests()) {
			res.TestId = inv.GetTests()[idx/repeat].GetTestId()
		}
		return res, nil
	})
	if err != nil {
		_ = m.Retry(w.RetryDelay)
	}
}

// ackStored has each job done once the runs log has stored its results, in the
// order they were published (the futures complete in that order), so a
// worker never waits on the log between runs.
func (w *Worker) ackStored() {
	for s := range w.stored {
		stored := false // a result stored now, not a duplicate of one stored before
		if s.ack != nil {
			duplicate, err := s.ack.Wait()
			if err != nil {
				w.Log.WarnContext(tracing.Extract(context.Background(), s.job.trace), "runner: storing a result failed, will retry",
					"subject", s.job.msg.Subject(), "err", err)
				s.job.failed = true
				continue
			}
			stored = !duplicate && s.counted
		} else if s.job.failed {
			_ = s.job.msg.Retry(w.RetryDelay)
		} else {
			_ = s.job.msg.Done()
		}
		w.mu.Lock()
		p := w.touched[s.inv]
		if p == nil {
			p = &progress{ws: s.ws, trace: s.job.trace, counts: map[int32]*[2]int64{}}
			w.touched[s.inv] = p
		}
		// Counting only results stored now means a run is never counted
		// twice: completion trusts the counters when they add up (see
		// App.countersTotal).
		if stored {
			c := p.counts[s.attempt]
			if c == nil {
				c = &[2]int64{}
				p.counts[s.attempt] = c
			}
			c[0]++
			if s.passed {
				c[1]++
			}
		}
		w.mu.Unlock()
	}
}

// checkInterval is how often a worker adds its progress to the counters
// and checks whether the invocations it worked on are complete.
const checkInterval = 100 * time.Millisecond

func (w *Worker) checkLoop(stop <-chan struct{}) {
	t := time.NewTicker(checkInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			w.check()
			return
		case <-t.C:
			w.check()
		}
	}
}

func (w *Worker) check() {
	w.mu.Lock()
	touched := w.touched
	w.touched = map[string]*progress{}
	w.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := w.App.Now()
	for inv, p := range touched {
		for attempt, c := range p.counts {
			if c[0] > 0 {
				_ = w.incr(ctx, inv, attempt, "done", c[0])
			}
			if c[1] > 0 {
				_ = w.incr(ctx, inv, attempt, "passed", c[1])
			}
		}
		w.watch[inv] = watched{ws: p.ws, trace: p.trace, last: now}
	}
	// An invocation is checked while this worker stores its results and a
	// little longer: other workers' last counts arrive within a check
	// interval, and only once they had the time may the results be counted.
	for inv, wt := range w.watch {
		mayCount := now.Sub(wt.last) >= countAfter
		done, err := w.App.ClaimCompletion(ctx, wt.ws, inv, mayCount)
		if err != nil {
			w.Log.WarnContext(tracing.Extract(ctx, wt.trace), "runner: completion check", "invocation", inv, "err", err)
		}
		if done || mayCount {
			delete(w.watch, inv)
		}
	}
}

// watched is an invocation a worker checks for completion, and when it
// last stored a result of it.
type watched struct {
	ws    string
	trace string // a traceparent of its jobs, for log lines
	last  time.Time
}

// countAfter is how long after its last result a worker waits for the
// counters to add up before it counts an invocation's results instead.
const countAfter = 5 * checkInterval

// invocation returns the invocation, re-read when older than the
// freshness bound or when the job is of an attempt it does not know.
func (w *Worker) invocation(ctx context.Context, ws, id string, attempt int32) (*testingv1.Invocation, error) {
	if inv := w.freshInvocation(id, attempt); inv != nil {
		return inv, nil
	}
	// The runs in flight of one invocation find it stale at the same
	// moment: one of them reads (and decodes) it for all.
	v, err, _ := w.invReads.Do(ws+"/"+id, func() (any, error) {
		inv, _, err := w.App.Invocations.Get(ctx, ws, id)
		if err != nil {
			return nil, err
		}
		w.mu.Lock()
		if len(w.invs) > 10_000 {
			clear(w.invs)
		}
		w.invs[id] = cachedInvocation{inv: inv, read: time.Now()}
		w.mu.Unlock()
		return inv, nil
	})
	if err != nil {
		return nil, err
	}
	if inv := v.(*testingv1.Invocation); knowsAttempt(inv, attempt) {
		return inv, nil
	}
	// A read already under way when this job's resubmission was stored.
	inv, _, err := w.App.Invocations.Get(ctx, ws, id)
	if err == nil && !knowsAttempt(inv, attempt) {
		// A round is stored before its jobs are queued: read without it,
		// the invocation is a stale answer (a store between leaders), and
		// the job is tried again later rather than taken for one of an
		// older round, which would settle it with its runs never played.
		return nil, fmt.Errorf("%w: invocation %s read without the job's attempt %d", aggregate.ErrStaleRead, id, attempt)
	}
	return inv, err
}

// freshInvocation is the invocation as cached, when it is fresh and knows
// the attempt; nil otherwise.
func (w *Worker) freshInvocation(id string, attempt int32) *testingv1.Invocation {
	w.mu.Lock()
	c, ok := w.invs[id]
	w.mu.Unlock()
	if ok && time.Since(c.read) < invocationFreshness && knowsAttempt(c.inv, attempt) {
		return c.inv
	}
	return nil
}

// knowsAttempt reports whether inv knows the attempt: its first run, or
// one of its resubmissions.
func knowsAttempt(inv *testingv1.Invocation, attempt int32) bool {
	return int32(len(inv.GetResubmissions())+1) >= attempt
}

func (w *Worker) definition(ctx context.Context, seq uint64) (domain.TestInput, error) {
	w.mu.Lock()
	d, ok := w.defs[seq]
	w.mu.Unlock()
	if ok {
		return d, nil
	}
	d, err := w.App.DefinitionAt(ctx, seq)
	if err != nil {
		return d, err
	}
	w.mu.Lock()
	if len(w.defs) > 50_000 {
		clear(w.defs)
	}
	w.defs[seq] = d
	w.mu.Unlock()
	return d, nil
}

// run executes the job's runs; redelivered: an earlier delivery may have
// stored some of their results.
func (w *Worker) run(ctx context.Context, m app.TakenJob, job *testingv1.RunJob, redelivered bool) error {
	inv, err := w.invocation(ctx, job.GetWorkspaceId(), job.GetInvocationId(), job.GetAttempt())
	if err != nil {
		return err
	}
	repeat := int(max(inv.GetRepeatCount(), 1))
	first, count := int(job.GetTestIndex())*repeat+int(job.GetRepeatIndex()), int(max(job.GetRunCount(), 1))
	if first+count > len(inv.GetTests())*repeat {
		return fmt.Errorf("job for runs %d..%d of %d", first, first+count-1, len(inv.GetTests())*repeat)
	}
	// A redelivery: an earlier attempt may have stored some results before
	// its worker died. Never run a run twice.
	return w.storeRuns(ctx, m, job, first, count, redelivered, func(idx int, runID string) (*testingv1.RunResult, error) {
		if idx > first {
			if inv, err = w.invocation(ctx, job.GetWorkspaceId(), job.GetInvocationId(), job.GetAttempt()); err != nil {
				return nil, err
			}
		}
		if !app.RunsRound(inv, job.GetAttempt()) {
			return nil, nil // cancelled, or of a round before the running one: done, recording nothing
		}
		pt := inv.GetTests()[idx/repeat]
		def, err := w.definition(ctx, pt.GetTestStreamSeq())
		if err != nil {
			return nil, err
		}
		r := Run{Invocation: inv, Test: pt, Definition: def, AgentConfig: inv.GetAgentConfigJson(), BranchID: inv.GetBranchId(),
			RunID: runID, Index: idx, Attempt: job.GetAttempt(), WorkerID: w.ID}
		for _, rs := range inv.GetResubmissions() {
			if rs.GetAttempt() == job.GetAttempt() {
				if len(rs.GetAgentConfigJson()) > 0 {
					r.AgentConfig = rs.GetAgentConfigJson()
				}
				if rs.GetBranchId() != "" {
					r.BranchID = rs.GetBranchId()
				}
			}
		}
		// A run queued on its agent's busy endpoint asks, once it has a
		// slot, whether the invocation still runs this round (read anew:
		// the wait may have been long): cancelled meanwhile, it has not
		// started, and stops unrecorded.
		gate := &model.Gate{Wanted: func() bool {
			cur, _, err := w.App.Invocations.Get(ctx, job.GetWorkspaceId(), job.GetInvocationId())
			return err != nil || app.RunsRound(cur, job.GetAttempt())
		}}
		res := w.Exec.Execute(model.WithGate(ctx, gate), r)
		if gate.Dropped() {
			return nil, nil
		}
		w.Metrics.observe(pt.GetTestType(), res)
		// The invocation may have been cancelled and resubmitted meanwhile.
		if inv, err = w.invocation(ctx, job.GetWorkspaceId(), job.GetInvocationId(), job.GetAttempt()); err != nil {
			return nil, err
		}
		if !app.KeepsResult(inv, job.GetAttempt()) {
			return nil, nil
		}
		return res, nil
	})
}

// storeRuns stores a result for each of the job's runs first to
// first+count-1, then has the job done once the runs log holds them all.
// With skipStored (a redelivery) a run whose result of the job's attempt
// is stored already is skipped. result makes a run's result, or nil to
// stop.
func (w *Worker) storeRuns(ctx context.Context, m app.TakenJob, job *testingv1.RunJob, first, count int, skipStored bool,
	result func(idx int, runID string) (*testingv1.RunResult, error)) error {
	ja := &jobAck{msg: m, trace: tracing.RequestTrace(ctx)}
	for idx := first; idx < first+count; idx++ {
		runID := domain.RunID(job.GetInvocationId(), idx)
		if _, err := events.RunSubject(job.GetWorkspaceId(), job.GetInvocationId(), runID); err != nil {
			return err
		}
		if skipStored {
			stored, notice, err := w.App.RecordedRun(ctx, job.GetWorkspaceId(), job.GetInvocationId(), runID, job.GetAttempt())
			if err != nil {
				return err
			}
			if stored {
				if notice != nil {
					if err := w.store(ctx, ja, job, *notice, false, false); err != nil {
						return err
					}
				}
				continue
			}
		}
		res, err := result(idx, runID)
		if err != nil {
			return err
		}
		if res == nil {
			break
		}
		if err := w.publishResult(ctx, ja, job, res); err != nil {
			return err
		}
	}
	w.stored <- storing{job: ja, ws: job.GetWorkspaceId(), inv: job.GetInvocationId()}
	return nil
}

// publishResult stores a run's result (and a failed run's notice); the
// job is acked once all of its results are stored.
func (w *Worker) publishResult(ctx context.Context, ja *jobAck, job *testingv1.RunJob, res *testingv1.RunResult) error {
	msgs, err := w.App.RunResultMessages(ctx, job, res)
	if err != nil {
		return err
	}
	for i, m := range msgs {
		if err := w.store(ctx, ja, job, m, i == 0, res.GetStatus() == domain.RunPassed); err != nil {
			return err
		}
	}
	return nil
}

// store sends m to the runs log, for ackStored to wait for: counted, a
// run's result counts towards its invocation's progress once stored (a
// failure notice does not).
func (w *Worker) store(ctx context.Context, ja *jobAck, job *testingv1.RunJob, m app.Message, counted, passed bool) error {
	fut, err := w.Ports.Results.Store(ctx, m)
	if err != nil {
		return err
	}
	w.stored <- storing{job: ja, ack: fut, ws: job.GetWorkspaceId(), inv: job.GetInvocationId(), attempt: job.GetAttempt(),
		counted: counted, passed: passed}
	return nil
}

// heartbeat keeps a long run's job from being redelivered.
func (w *Worker) heartbeat(m app.TakenJob) (stop func()) {
	return tick.Until(w.AckWait/3, func() { _ = m.Working() })
}

// incr adds n to a progress counter.
func (w *Worker) incr(ctx context.Context, invocationID string, attempt int32, counter string, n int64) error {
	subject, err := events.TestCountSubject(invocationID, attempt, counter)
	if err != nil {
		return err
	}
	return w.Ports.Counts.Incr(ctx, subject, n)
}
