package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/pkg/ids"
	"github.com/voiceai-platform/voiceai/pkg/tracing"
	"github.com/voiceai-platform/voiceai/services/testing/adapters"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
	"github.com/voiceai-platform/voiceai/services/testing/model"
)

// Worker pulls run jobs from the invocations' queues on TESTJOBS and
// executes them, about Concurrency at a time. Results are events on TESTRUNS; counters on TESTCOUNTS tell the
// worker that finishes an invocation's last run to complete it.
type Worker struct {
	App *app.App
	// JS holds the work queue, and the results and counters the worker
	// stores (the worker is a JetStream client, the app is not).
	JS          jetstream.JetStream
	Exec        *Executor
	Concurrency int
	// Headroom is how many jobs beyond Concurrency the worker runs for
	// workspaces other than the busiest (default a quarter of Concurrency,
	// at least 1): see app.Scheduler.
	Headroom int
	// AckWait is how long a job may go without a heartbeat before
	// JetStream redelivers it to another worker.
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

	mu   sync.Mutex
	invs map[string]cachedInvocation
	defs map[uint64]domain.TestInput

	stored  chan storing         // results being stored, in order
	touched map[string]*progress // invocations with stored results since the last check
	watch   map[string]watched   // invocations checked for completion (check loop only)
}

// storing is a run result on its way to the stream (ack set), or, with
// ack nil, the end of a job's results: the job is acked once the stream
// has all of them.
type storing struct {
	job     *jobAck
	ack     jetstream.PubAckFuture
	ws      string
	inv     string
	attempt int32
	passed  bool
}

// jobAck is a job whose results are being stored; failed when one of
// them could not be (the job is then redelivered).
type jobAck struct {
	msg    jetstream.Msg
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
// (its cancellation) may be.
const invocationFreshness = time.Second

// listEvery is how often a busy worker lists the queues again; idleEvery
// how often an idle one does when no enqueuer told it of new jobs.
const (
	listEvery = 500 * time.Millisecond
	idleEvery = 2 * time.Second
)

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
	queues := adapters.NewRunQueues(w.JS, w.AckWait, w.Log)
	// wake: a slot was freed; notified: an enqueuer queued jobs.
	wake, notified := make(chan struct{}, 1), make(chan struct{}, 1)
	signal := func(c chan struct{}) {
		select {
		case c <- struct{}{}:
		default:
		}
	}
	sub, err := w.JS.Conn().Subscribe(events.TestJobsQueuedNotify, func(*nats.Msg) { signal(notified) })
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }()
	storerDone := make(chan struct{})
	go func() { defer close(storerDone); w.ackStored() }()
	checkerStop, checkerDone := make(chan struct{}), make(chan struct{})
	go func() { defer close(checkerDone); w.checkLoop(checkerStop) }()
	defer func() { close(w.stored); <-storerDone; close(checkerStop); <-checkerDone }()

	var running sync.WaitGroup
	defer running.Wait()
	list := true
	for ctx.Err() == nil {
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
		msgs, err := queues.Fetch(ctx, q, n)
		if err != nil && ctx.Err() == nil {
			w.Log.Debug("runner: fetching jobs", "invocation", q.Invocation, "err", err)
		}
		for _, m := range msgs {
			sched.Took(q.Workspace, q.Invocation)
			stop := w.heartbeat(m)
			running.Add(1)
			go func() {
				defer func() { stop(); sched.Done(q.Workspace, q.Invocation); signal(wake); running.Done() }()
				jctx := model.WithSlot(context.WithoutCancel(ctx), func() func() {
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

func (w *Worker) handle(ctx context.Context, m jetstream.Msg) {
	delivered := uint64(1)
	if md, _ := m.Metadata(); md != nil {
		delivered = md.NumDelivered
	}
	// The job continues the trace of the request that invoked the tests;
	// its results carry the job's span on, and its log lines name it.
	ctx, span := tracing.Start(ctx, m.Headers().Get(events.HeaderTraceparent), "run job", trace.SpanKindConsumer,
		trace.WithAttributes(attribute.Int("voiceai.delivery", int(delivered))))
	defer span.End()
	if tp := tracing.Traceparent(ctx); tp != "" {
		ctx = httpx.WithTraceparentValue(ctx, tp)
	}
	var job testingv1.RunJob
	if err := proto.Unmarshal(m.Data(), &job); err != nil {
		w.Log.ErrorContext(ctx, "runner: undecodable job dropped", "subject", m.Subject(), "err", err)
		_ = m.Term()
		return
	}
	span.SetAttributes(attribute.String("voiceai.invocation_id", job.GetInvocationId()), attribute.Int("voiceai.runs", int(max(job.GetRunCount(), 1))))
	if delivered > w.MaxAttempts {
		w.giveUp(ctx, m, &job, delivered)
		return
	}
	if job.GetKind() == domain.JobLoad {
		if err := w.load(ctx, m, &job); err != nil {
			w.Log.WarnContext(ctx, "runner: load job failed, will retry", "subject", m.Subject(), "attempt", delivered, "err", err)
			_ = m.NakWithDelay(w.RetryDelay)
		}
		return
	}
	if job.GetKind() == "bucketing" {
		if err := w.bucket(ctx, &job, delivered); err != nil {
			w.Log.WarnContext(ctx, "runner: bucketing failed, will retry", "subject", m.Subject(), "err", err)
			_ = m.NakWithDelay(w.RetryDelay)
			return
		}
		_ = m.Ack()
		return
	}
	if err := w.run(ctx, m, &job, delivered > 1); err != nil {
		w.Log.WarnContext(ctx, "runner: job failed, will retry", "subject", m.Subject(), "attempt", delivered, "err", err)
		_ = m.NakWithDelay(w.RetryDelay)
	}
}

// load plays a load test's job: its callers at once, then its samples
// stored, the job acked and the step checked. A redelivered job whose
// samples were stored is not played again.
func (w *Worker) load(ctx context.Context, m jetstream.Msg, job *testingv1.RunJob) error {
	inv, err := w.invocation(ctx, job.GetWorkspaceId(), job.GetInvocationId(), 1)
	if err != nil {
		return err
	}
	load := inv.GetLoad()
	step := int(job.GetLoadStep())
	if load == nil || load.GetTest() == nil || step >= len(load.GetSteps()) {
		w.Log.ErrorContext(ctx, "runner: a load job of no load step dropped", "subject", m.Subject())
		_ = m.Term()
		return nil
	}
	if inv.GetStatus() != domain.InvocationRunning {
		_ = m.Ack() // cancelled: its callers do not call
		return nil
	}
	subject, err := events.LoadSamplesSubject(job.GetWorkspaceId(), job.GetInvocationId(), step, int(job.GetLoadJob()))
	if err != nil {
		_ = m.Term()
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
	})
	return w.storeLoad(ctx, m, s)
}

// storeLoad stores a load job's samples (once per job), acks the job and
// checks whether its step is done.
func (w *Worker) storeLoad(ctx context.Context, m jetstream.Msg, s *testingv1.LoadSamples) error {
	msg, err := w.App.LoadSamplesMessage(ctx, s)
	if err != nil {
		return err
	}
	if _, err := w.App.Runs.Publish(ctx, msg); err != nil {
		return err
	}
	return w.ackLoad(ctx, m, &testingv1.RunJob{WorkspaceId: s.GetWorkspaceId(), InvocationId: s.GetInvocationId()})
}

func (w *Worker) ackLoad(ctx context.Context, m jetstream.Msg, job *testingv1.RunJob) error {
	if err := m.DoubleAck(ctx); err != nil {
		return err
	}
	if _, err := w.App.CheckLoadStep(ctx, job.GetWorkspaceId(), job.GetInvocationId()); err != nil {
		// The sweeper checks again; nothing is lost.
		w.Log.WarnContext(ctx, "runner: load step check", "invocation", job.GetInvocationId(), "err", err)
	}
	return nil
}

// giveUp ends a job delivered more than maxAttempts times: a run is
// recorded failed with the reason, bucketing is recorded failed.
func (w *Worker) giveUp(ctx context.Context, m jetstream.Msg, job *testingv1.RunJob, delivered uint64) {
	reason := fmt.Sprintf("The run was started %d times without finishing (its workers stopped or the platform failed); it was given up.", delivered-1)
	w.Log.ErrorContext(ctx, "runner: job given up", "subject", m.Subject(), "deliveries", delivered)
	if job.GetKind() == domain.JobLoad {
		// Its callers' turns count as failed, with the reason.
		s := &testingv1.LoadSamples{WorkspaceId: job.GetWorkspaceId(), InvocationId: job.GetInvocationId(), Step: job.GetLoadStep(),
			Job: job.GetLoadJob(), Callers: job.GetLoadCallers(), WorkerId: w.ID}
		turns := int64(1)
		if inv, err := w.invocation(ctx, job.GetWorkspaceId(), job.GetInvocationId(), 1); err == nil {
			turns = int64(max(inv.GetLoad().GetTurnsPerCaller(), 1))
		}
		why := fmt.Sprintf("The load job holding these callers was started %d times without finishing (its workers stopped or the platform failed); it was given up.", delivered-1)
		s.Failures = []*testingv1.LoadFailure{{Reason: why, Count: int64(job.GetLoadCallers()) * turns}}
		if err := w.storeLoad(ctx, m, s); err != nil {
			_ = m.NakWithDelay(w.RetryDelay)
		}
		return
	}
	if job.GetKind() == "bucketing" {
		inv, _, err := w.App.Invocations.Get(ctx, job.GetWorkspaceId(), job.GetInvocationId())
		if err == nil {
			err = w.finishBucketing(ctx, inv, "Grouping the results failed on every attempt.")
		}
		if err != nil {
			_ = m.NakWithDelay(w.RetryDelay)
			return
		}
		_ = m.Ack()
		return
	}
	// A job whose run id or subject is malformed never gets a result.
	first, err := domain.RunIndex(job.GetInvocationId(), job.GetRunId())
	if err == nil {
		_, err = events.RunSubject(job.GetWorkspaceId(), job.GetInvocationId(), job.GetRunId())
	}
	if err != nil {
		_ = m.Term()
		return
	}
	inv, _ := w.invocation(ctx, job.GetWorkspaceId(), job.GetInvocationId(), job.GetAttempt())
	repeat := int(max(inv.GetRepeatCount(), 1))
	err = w.storeRuns(ctx, m, job, first, int(max(job.GetRunCount(), 1)), true, func(idx int, runID string) (*testingv1.RunResult, error) {
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
		_ = m.NakWithDelay(w.RetryDelay)
	}
}

// ackStored acks each job once the stream has stored its results, in the
// order they were published (the futures complete in that order), so a
// worker never waits on the stream between runs.
func (w *Worker) ackStored() {
	for s := range w.stored {
		stored := false // a result stored now, not a duplicate of one stored before
		if s.ack != nil {
			select {
			case pa := <-s.ack.Ok():
				stored = !pa.Duplicate
			case err := <-s.ack.Err():
				w.Log.WarnContext(tracing.Extract(context.Background(), s.job.trace), "runner: storing a result failed, will retry",
					"subject", s.job.msg.Subject(), "err", err)
				s.job.failed = true
				continue
			}
		} else if s.job.failed {
			_ = s.job.msg.NakWithDelay(w.RetryDelay)
		} else {
			_ = s.job.msg.Ack()
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
	w.mu.Lock()
	c, ok := w.invs[id]
	w.mu.Unlock()
	if ok && time.Since(c.read) < invocationFreshness && int32(len(c.inv.GetResubmissions())+1) >= attempt {
		return c.inv, nil
	}
	inv, _, err := w.App.Invocations.Get(ctx, ws, id)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	if len(w.invs) > 10_000 {
		clear(w.invs)
	}
	w.invs[id] = cachedInvocation{inv: inv, read: w.App.Now()}
	w.mu.Unlock()
	return inv, nil
}

func (w *Worker) definition(ctx context.Context, seq uint64) (domain.TestInput, error) {
	w.mu.Lock()
	d, ok := w.defs[seq]
	w.mu.Unlock()
	if ok {
		return d, nil
	}
	t, err := w.App.TestAt(ctx, seq)
	if err != nil {
		return d, err
	}
	if d, err = domain.ParseDefinition(t.GetDefinitionJson()); err != nil {
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
func (w *Worker) run(ctx context.Context, m jetstream.Msg, job *testingv1.RunJob, redelivered bool) error {
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
		if inv.GetStatus() == domain.InvocationCancelled {
			return nil, nil // cancel stops runs not started
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
		res := w.Exec.Execute(ctx, r)
		w.Metrics.observe(pt.GetTestType(), res)
		return res, nil
	})
}

// storeRuns stores a result for each of the job's runs first to
// first+count-1, then has the job acked once the stream holds them all.
// With skipStored (a redelivery) a run whose result of the job's attempt
// is stored already is skipped. result makes a run's result, or nil to
// stop.
func (w *Worker) storeRuns(ctx context.Context, m jetstream.Msg, job *testingv1.RunJob, first, count int, skipStored bool,
	result func(idx int, runID string) (*testingv1.RunResult, error)) error {
	ja := &jobAck{msg: m, trace: tracing.RequestTrace(ctx)}
	for idx := first; idx < first+count; idx++ {
		runID := domain.RunID(job.GetInvocationId(), idx)
		subject, err := events.RunSubject(job.GetWorkspaceId(), job.GetInvocationId(), runID)
		if err != nil {
			return err
		}
		if skipStored {
			if stored, err := w.recorded(ctx, subject, job.GetAttempt()); err != nil {
				return err
			} else if stored {
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
		if err := w.publishResult(ctx, ja, subject, job, res); err != nil {
			return err
		}
	}
	w.stored <- storing{job: ja, ws: job.GetWorkspaceId(), inv: job.GetInvocationId()}
	return nil
}

// publishResult stores a run's result; the job is acked once all of its
// results are stored.
func (w *Worker) publishResult(ctx context.Context, ja *jobAck, subject string, job *testingv1.RunJob, res *testingv1.RunResult) error {
	meta := esproto.Meta(ctx, job.GetWorkspaceId(), res.GetRunId()+"#"+strconv.Itoa(int(job.GetAttempt())), w.App.Now())
	msg, err := eventstore.NewEventMsg(ctx, subject, meta, &testingv1.RunCompleted{Meta: meta, Run: res})
	if err != nil {
		return err
	}
	msg.Header.Set(events.HeaderRunStatus, res.GetStatus())
	msg.Header.Set(events.HeaderRunAttempt, strconv.Itoa(int(res.GetAttempt())))
	fut, err := w.JS.PublishMsgAsync(msg)
	if err != nil {
		return err
	}
	w.stored <- storing{job: ja, ack: fut, ws: job.GetWorkspaceId(), inv: job.GetInvocationId(), attempt: job.GetAttempt(),
		passed: res.GetStatus() == domain.RunPassed}
	return nil
}

// heartbeat keeps a long run's job from being redelivered.
func (w *Worker) heartbeat(m jetstream.Msg) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(w.AckWait / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = m.InProgress()
			}
		}
	}()
	return func() { close(done) }
}

// recorded reports whether the run's result for attempt (or a later one)
// is stored.
func (w *Worker) recorded(ctx context.Context, subject string, attempt int32) (bool, error) {
	msg, _, found, err := esproto.Last(ctx, eventstore.New(w.JS, events.TestRunsStream), subject)
	if err != nil || !found {
		return false, err
	}
	ev, ok := msg.(*testingv1.RunCompleted)
	return ok && ev.GetRun().GetAttempt() >= attempt && ev.GetRun().GetStatus() != "", nil
}

// incr adds n to a progress counter.
func (w *Worker) incr(ctx context.Context, invocationID string, attempt int32, counter string, n int64) error {
	subject, err := events.TestCountSubject(invocationID, attempt, counter)
	if err != nil {
		return err
	}
	msg := nats.NewMsg(subject)
	msg.Header.Set("Nats-Incr", strconv.FormatInt(n, 10))
	_, err = w.JS.PublishMsg(ctx, msg)
	return err
}

// bucket groups a finished invocation's runs per test and records the
// groups; after repeated failures it records bucketing as failed.
func (w *Worker) bucket(ctx context.Context, job *testingv1.RunJob, delivered uint64) error {
	inv, _, err := w.App.Invocations.Get(ctx, job.GetWorkspaceId(), job.GetInvocationId())
	if err != nil {
		return err
	}
	if inv.GetBucketingStatus() != domain.BucketingPending || inv.GetStatus() != domain.InvocationCompleted {
		return nil
	}
	groups, err := w.groups(ctx, inv)
	if err != nil {
		if delivered >= 3 {
			return w.finishBucketing(ctx, inv, "Grouping the results failed: "+err.Error())
		}
		return err
	}
	store := eventstore.New(w.JS, events.TestRunsStream)
	for _, g := range groups {
		meta := esproto.Meta(ctx, inv.GetWorkspaceId(), fmt.Sprintf("%s#group#%d#%d", inv.GetInvocationId(), g.GetTestIndex(), inv.GetJobsTotal()), w.App.Now())
		subject, err := events.ResultGroupSubject(inv.GetWorkspaceId(), inv.GetInvocationId(), strconv.Itoa(int(g.GetTestIndex())))
		if err != nil {
			return err
		}
		if _, err := esproto.Append(ctx, store, subject, eventstore.AnySeq, meta, &testingv1.ResultGroupComputed{Meta: meta, InvocationId: inv.GetInvocationId(), Group: g}); err != nil {
			return err
		}
	}
	return w.finishBucketing(ctx, inv, "")
}

func (w *Worker) finishBucketing(ctx context.Context, inv *testingv1.Invocation, failure string) error {
	total := inv.GetJobsTotal()
	_, err := w.App.Invocations.Update(ctx, inv.GetWorkspaceId(), inv.GetInvocationId(), "", func(cur *testingv1.Invocation, meta *commonv1.EventMeta) (proto.Message, error) {
		if cur.BucketingStatus != domain.BucketingPending || cur.JobsTotal != total {
			return nil, nil // a resubmission started a new round
		}
		if failure != "" {
			cur.BucketingStatus, cur.BucketingError = domain.BucketingFailed, failure
			return &testingv1.BucketingFailed{Meta: meta, Invocation: cur}, nil
		}
		cur.BucketingStatus = domain.BucketingCompleted
		return &testingv1.BucketingCompleted{Meta: meta, Invocation: cur}, nil
	})
	return err
}

func (w *Worker) groups(ctx context.Context, inv *testingv1.Invocation) ([]*testingv1.ResultGroup, error) {
	repeat := int(max(inv.GetRepeatCount(), 1))
	perTest := make([][]domain.BucketRun, len(inv.GetTests()))
	err := w.App.EachRunResult(ctx, inv, func(r *testingv1.RunResult) error {
		idx, err := domain.RunIndex(inv.GetInvocationId(), r.GetRunId())
		if err != nil || idx/repeat >= len(perTest) {
			return nil
		}
		perTest[idx/repeat] = append(perTest[idx/repeat], domain.BucketRun{
			RunID: r.GetRunId(), Status: r.GetStatus(), Response: responseText(r.GetAgentResponsesJson()), Reason: r.GetRationaleSummary(),
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]*testingv1.ResultGroup, 0, len(perTest))
	for i, runs := range perTest {
		pt := inv.GetTests()[i]
		g := &testingv1.ResultGroup{TestId: pt.GetTestId(), TestName: pt.GetTestName(), WorkflowNodeId: pt.GetWorkflowNodeId(), TestIndex: int32(i)}
		for _, b := range domain.BucketRuns(runs) {
			g.Buckets = append(g.Buckets, &testingv1.Bucket{TestRunIds: b.RunIDs, Title: b.Title, Reason: b.Reason, Status: b.Status})
		}
		out = append(out, g)
	}
	return out, nil
}

func responseText(raw []byte) string {
	var msgs []struct {
		Message   string `json:"message"`
		ToolCalls []struct {
			ToolName string `json:"tool_name"`
			Params   string `json:"params_as_json"`
		} `json:"tool_calls"`
	}
	_ = json.Unmarshal(raw, &msgs)
	s := ""
	for _, m := range msgs {
		s += m.Message
		for _, c := range m.ToolCalls {
			s += " " + c.ToolName + " " + c.Params
		}
	}
	return s
}
