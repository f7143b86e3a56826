package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/ids"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// Worker pulls run jobs from TESTJOBS and executes them, Concurrency at a
// time. Results are events on TESTRUNS; counters on TESTCOUNTS tell the
// worker that finishes an invocation's last run to complete it.
type Worker struct {
	App         *app.App
	Exec        *Executor
	Concurrency int
	// AckWait is how long a job may go without a heartbeat before
	// JetStream redelivers it to another worker.
	AckWait time.Duration
	ID      string
	Log     *slog.Logger

	mu   sync.Mutex
	invs map[string]cachedInvocation
	defs map[uint64]domain.TestInput
}

type cachedInvocation struct {
	inv  *testingv1.Invocation
	read time.Time
}

// invocationFreshness bounds how stale a worker's view of an invocation
// (its cancellation) may be.
const invocationFreshness = time.Second

// Run works until ctx ends; jobs in progress finish first.
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
	w.invs, w.defs = map[string]cachedInvocation{}, map[uint64]domain.TestInput{}
	cons, err := app.EnsureRunnersConsumer(ctx, w.App.JS, w.AckWait)
	if err != nil {
		return err
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(w.Concurrency * 2))
	if err != nil {
		return err
	}
	go func() { <-ctx.Done(); it.Drain() }()
	jobs := make(chan jetstream.Msg)
	var wg sync.WaitGroup
	for range w.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range jobs {
				w.handle(context.WithoutCancel(ctx), m)
			}
		}()
	}
	defer func() { close(jobs); wg.Wait() }()
	for {
		m, err := it.Next()
		if err != nil {
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) || ctx.Err() != nil {
				return nil
			}
			w.Log.Warn("runner: next job", "err", err)
			continue
		}
		jobs <- m
	}
}

func (w *Worker) handle(ctx context.Context, m jetstream.Msg) {
	var job testingv1.RunJob
	if err := proto.Unmarshal(m.Data(), &job); err != nil {
		w.Log.Error("runner: undecodable job dropped", "subject", m.Subject(), "err", err)
		_ = m.Term()
		return
	}
	var err error
	if job.GetKind() == "bucketing" {
		err = w.bucket(ctx, m, &job)
	} else {
		err = w.run(ctx, m, &job)
	}
	if err != nil {
		w.Log.Warn("runner: job failed, will retry", "subject", m.Subject(), "err", err)
		_ = m.NakWithDelay(time.Second)
		return
	}
	_ = m.Ack()
}

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
	w.invs[id] = cachedInvocation{inv: inv, read: time.Now()}
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

func (w *Worker) run(ctx context.Context, m jetstream.Msg, job *testingv1.RunJob) error {
	inv, err := w.invocation(ctx, job.GetWorkspaceId(), job.GetInvocationId(), job.GetAttempt())
	if err != nil {
		return err
	}
	if inv.GetStatus() == domain.InvocationCancelled {
		return nil // cancel stops runs that have not started
	}
	subject, err := events.RunSubject(job.GetWorkspaceId(), job.GetInvocationId(), job.GetRunId())
	if err != nil {
		return err
	}
	if md, _ := m.Metadata(); md != nil && md.NumDelivered > 1 {
		// A redelivery: an earlier attempt may have recorded the result
		// before its worker died. Never run a run twice.
		if status, err := w.recorded(ctx, subject, job.GetAttempt()); err != nil {
			return err
		} else if status != "" {
			return w.count(ctx, inv, job, status)
		}
	}
	repeat := int(max(inv.GetRepeatCount(), 1))
	idx := int(job.GetTestIndex())*repeat + int(job.GetRepeatIndex())
	if int(job.GetTestIndex()) >= len(inv.GetTests()) {
		return fmt.Errorf("job for test %d of %d", job.GetTestIndex(), len(inv.GetTests()))
	}
	pt := inv.GetTests()[job.GetTestIndex()]
	def, err := w.definition(ctx, pt.GetTestStreamSeq())
	if err != nil {
		return err
	}
	r := Run{Invocation: inv, Test: pt, Definition: def, AgentConfig: inv.GetAgentConfigJson(), BranchID: inv.GetBranchId(),
		RunID: job.GetRunId(), Index: idx, Attempt: job.GetAttempt(), WorkerID: w.ID}
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
	stop := w.heartbeat(m)
	res := w.Exec.Execute(ctx, r)
	stop()
	meta := &commonv1.EventMeta{EventId: ids.New("evt"), OccurredAtUnixMs: time.Now().UnixMilli(), WorkspaceId: inv.GetWorkspaceId(),
		CommandId: job.GetRunId() + "#" + strconv.Itoa(int(job.GetAttempt()))}
	if _, err := esproto.Append(ctx, eventstore.New(w.App.JS, events.TestRunsStream), subject, eventstore.AnySeq, meta,
		&testingv1.RunCompleted{Meta: meta, Run: res}); err != nil {
		return err
	}
	return w.count(ctx, inv, job, res.GetStatus())
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

// recorded returns the status of the run's result for attempt, or "" when
// none is recorded yet.
func (w *Worker) recorded(ctx context.Context, subject string, attempt int32) (string, error) {
	rec, found, err := eventstore.New(w.App.JS, events.TestRunsStream).Last(ctx, subject)
	if err != nil || !found {
		return "", err
	}
	msg, err := esproto.Decode(rec)
	if err != nil {
		return "", err
	}
	if ev, ok := msg.(*testingv1.RunCompleted); ok && ev.GetRun().GetAttempt() >= attempt {
		return ev.GetRun().GetStatus(), nil
	}
	return "", nil
}

// count adds the run to the invocation's counters (each increment carries
// a message id, so a redelivered job does not count twice) and completes
// the invocation when this was its last job.
func (w *Worker) count(ctx context.Context, inv *testingv1.Invocation, job *testingv1.RunJob, status string) error {
	key := job.GetRunId() + "#" + strconv.Itoa(int(job.GetAttempt()))
	if status == domain.RunPassed {
		if _, err := w.incr(ctx, events.TestCountSubject(inv.GetInvocationId(), "passed"), key+"#passed"); err != nil {
			return err
		}
	}
	// Message ids deduplicate across the whole stream: one per counter.
	done, err := w.incr(ctx, events.TestCountSubject(inv.GetInvocationId(), "done"), key+"#done")
	if err != nil {
		return err
	}
	if done < 0 { // a duplicate increment: read the value instead
		if done, _, err = w.App.Counts(ctx, inv.GetInvocationId()); err != nil {
			return err
		}
	}
	if done < inv.GetJobsTotal() {
		return nil
	}
	return w.complete(ctx, inv.GetWorkspaceId(), inv.GetInvocationId(), done)
}

// incr adds one to a counter; it returns -1 for a deduplicated increment.
func (w *Worker) incr(ctx context.Context, subject, msgID string) (int64, error) {
	msg := nats.NewMsg(subject)
	msg.Header.Set("Nats-Incr", "1")
	msg.Header.Set(jetstream.MsgIDHeader, msgID)
	ack, err := w.App.JS.PublishMsg(ctx, msg)
	if err != nil {
		return 0, err
	}
	if ack.Duplicate || ack.Value == "" {
		return -1, nil
	}
	return strconv.ParseInt(ack.Value, 10, 64)
}

// complete marks the invocation completed once done reaches its jobs, and
// queues bucketing when runs were repeated.
func (w *Worker) complete(ctx context.Context, ws, id string, done int64) error {
	_, passed, err := w.App.Counts(ctx, id)
	if err != nil {
		return err
	}
	var completed *testingv1.Invocation
	_, err = w.App.Invocations.Update(ctx, ws, id, "", func(inv *testingv1.Invocation, meta *commonv1.EventMeta) (proto.Message, error) {
		if inv.Status != domain.InvocationRunning || done < inv.JobsTotal {
			return nil, nil
		}
		now := time.Now().Unix()
		inv.Status, inv.CompletedAtUnix = domain.InvocationCompleted, &now
		completed = inv
		return &testingv1.InvocationCompleted{Meta: meta, Invocation: inv, PassedCount: passed, FailedCount: done - passed}, nil
	})
	if err != nil || completed == nil || completed.GetRepeatCount() <= 1 {
		return err
	}
	job := &testingv1.RunJob{WorkspaceId: ws, InvocationId: id, Kind: "bucketing", Attempt: int32(len(completed.GetResubmissions()) + 1)}
	data, _ := proto.Marshal(job)
	msg := &nats.Msg{Subject: events.TestJobSubject(ws, id, "bucketing"), Data: data, Header: nats.Header{}}
	msg.Header.Set(jetstream.MsgIDHeader, id+"#bucketing#"+strconv.FormatInt(completed.GetJobsTotal(), 10))
	_, err = w.App.JS.PublishMsg(ctx, msg)
	return err
}

// bucket groups a finished invocation's runs per test and records the
// groups; after repeated failures it records bucketing as failed.
func (w *Worker) bucket(ctx context.Context, m jetstream.Msg, job *testingv1.RunJob) error {
	inv, _, err := w.App.Invocations.Get(ctx, job.GetWorkspaceId(), job.GetInvocationId())
	if err != nil {
		return err
	}
	if inv.GetBucketingStatus() != domain.BucketingPending || inv.GetStatus() != domain.InvocationCompleted {
		return nil
	}
	groups, err := w.groups(ctx, inv)
	if err != nil {
		if md, _ := m.Metadata(); md != nil && md.NumDelivered >= 3 {
			return w.finishBucketing(ctx, inv, "Grouping the results failed: "+err.Error())
		}
		return err
	}
	store := eventstore.New(w.App.JS, events.TestRunsStream)
	for _, g := range groups {
		meta := &commonv1.EventMeta{EventId: ids.New("evt"), OccurredAtUnixMs: time.Now().UnixMilli(), WorkspaceId: inv.GetWorkspaceId(),
			CommandId: fmt.Sprintf("%s#group#%d#%d", inv.GetInvocationId(), g.GetTestIndex(), inv.GetJobsTotal())}
		subject := events.ResultGroupSubject(inv.GetWorkspaceId(), inv.GetInvocationId(), strconv.Itoa(int(g.GetTestIndex())))
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
