package app

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/aggregate"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// The ports below are what a runner (runner.Worker) drives besides the
// App: the queues it takes run jobs from, the runs log it stores results
// in without waiting for each, and the counters it adds its progress to.
// adapters implements them on JetStream (adapters.NewRunnerPorts) and in
// memory (memory.Ports.RunnerPorts); both pass runnerportstest.

// TakenJob is a job a runner took from an invocation's queue: it is the
// runner's until the runner says how it ended (Done, Retry or Drop), or
// stops saying it is Working on it for the queue's ack wait, when the job
// is delivered again.
type TakenJob interface {
	Subject() string
	Data() []byte
	// Traceparent is the trace of the request that queued the job.
	Traceparent() string
	// Delivered is how many times the job was delivered, this time included.
	Delivered() uint64
	// Queued is when the job was stored on its queue; a job given back
	// keeps it.
	Queued() time.Time
	// Done takes the job off its queue.
	Done() error
	// DoneConfirmed is Done, returning once the queue confirmed it.
	DoneConfirmed(ctx context.Context) error
	// Retry gives the job back, to be delivered again after delay.
	Retry(delay time.Duration) error
	// Drop takes the job off its queue undone: it is never delivered again.
	Drop() error
	// Working tells the queue the job is still being worked on.
	Working() error
}

// RunQueues is a runner's view of the invocations' queues of run jobs.
type RunQueues interface {
	// Refresh lists the queues again; held is how many of a queue's jobs
	// this runner holds.
	Refresh(ctx context.Context, held func(ws, inv string) int) error
	// Listed is when the queues were last listed.
	Listed() time.Time
	// Queues are the queues with jobs waiting as last listed, less the
	// jobs taken since.
	Queues() []RunQueue
	// Take takes up to n of q's waiting jobs without waiting for more.
	Take(ctx context.Context, q RunQueue, n int) ([]TakenJob, error)
	// Notify calls queued whenever an enqueuer says it queued jobs, until
	// stop is called.
	Notify(queued func()) (stop func(), err error)
}

// ResultStore stores run results in the runs log without waiting for each.
type ResultStore interface {
	// Store sends m; the result says, once Wait returns, whether it was
	// stored, or was a duplicate of one stored before.
	Store(ctx context.Context, m Message) (StoredResult, error)
}

// StoredResult is a result on its way to the runs log.
type StoredResult interface {
	// Wait returns once the log has the result or refused it.
	Wait() (duplicate bool, err error)
}

// CounterAdder adds to the progress counters (app.Counters reads them).
type CounterAdder interface {
	Incr(ctx context.Context, subject string, n int64) error
}

// RunnerPorts are the adapters a runner drives.
type RunnerPorts struct {
	Queues  RunQueues
	Results ResultStore
	Counts  CounterAdder
}

// RunResultMessages are the messages storing a run's result of the
// job's attempt, each stored once per run and attempt: the result on the
// run's subject and, for a failed run, the same again on its failure
// subject (events.RunFailureSubject), for the readers of failed runs
// alone.
func (a *App) RunResultMessages(ctx context.Context, job *testingv1.RunJob, res *testingv1.RunResult) ([]Message, error) {
	ws, inv, run := job.GetWorkspaceId(), job.GetInvocationId(), res.GetRunId()
	subject, err := events.RunSubject(ws, inv, run)
	if err != nil {
		return nil, err
	}
	if domain.FitRunResult(res) {
		a.Log.InfoContext(ctx, "run result cut to fit", "run_id", run, "bytes", domain.MaxRunResultBytes)
	}
	id := resultID(run, job.GetAttempt())
	meta := esproto.Meta(ctx, ws, id, a.Now())
	e, err := esproto.Encode(ctx, meta, &testingv1.RunCompleted{Meta: meta, Run: res})
	if err != nil {
		return nil, err
	}
	m := eventMessage(subject, id, e)
	m.Header.Set(events.HeaderRunStatus, res.GetStatus())
	m.Header.Set(events.HeaderRunAttempt, strconv.Itoa(int(res.GetAttempt())))
	if res.GetStatus() != domain.RunFailed {
		return []Message{m}, nil
	}
	notice, err := failureNotice(m, ws, inv, run)
	return []Message{m, notice}, err
}

// resultID is the id a run's result of attempt is stored under.
func resultID(runID string, attempt int32) string {
	return runID + "#" + strconv.Itoa(int(attempt))
}

// failureNotice is a failed run's result message again, on the run's
// failure subject under an id of its own.
func failureNotice(result Message, ws, invocationID, runID string) (Message, error) {
	subject, err := events.RunFailureSubject(ws, invocationID, runID)
	if err != nil {
		return Message{}, err
	}
	h := eventlog.Header{}
	maps.Copy(h, result.Header)
	h.Set(events.HeaderRunStatus, events.RunStatusFailed)
	return Message{Subject: subject, ID: result.ID + "#failed", Header: h, Data: result.Data}, nil
}

// RecordedRun says whether the run has a result of attempt (or a later
// one) stored. For a failed one, notice is its failure notice, which a
// redelivered job stores again: the runner before it may have died
// between the two (a second store of it is a duplicate).
func (a *App) RecordedRun(ctx context.Context, ws, invocationID, runID string, attempt int32) (recorded bool, notice *Message, err error) {
	subject, err := events.RunSubject(ws, invocationID, runID)
	if err != nil {
		return false, nil, err
	}
	rec, found, err := a.Runs.Last(ctx, subject)
	if err != nil || !found {
		return false, nil, err
	}
	msg, err := esproto.Decode(rec)
	if err != nil {
		return false, nil, err
	}
	ev, ok := msg.(*testingv1.RunCompleted)
	run := ev.GetRun()
	if !ok || run.GetAttempt() < attempt || run.GetStatus() == "" {
		return false, nil, nil
	}
	if run.GetStatus() != domain.RunFailed {
		return true, nil, nil
	}
	stored := Message{Subject: rec.Subject, ID: resultID(runID, run.GetAttempt()), Header: rec.Header, Data: rec.Data}
	n, err := failureNotice(stored, ws, invocationID, runID)
	if err != nil {
		return false, nil, err
	}
	return true, &n, nil
}

// GroupResults groups a finished invocation's runs per test and records
// the groups, then bucketing as completed; round is the bucketing job's
// (0 from a version before it), delivered how many times the job was
// delivered: from the third, a failure to group is recorded as bucketing
// failed.
func (a *App) GroupResults(ctx context.Context, ws, invocationID string, round int64, delivered uint64) error {
	inv, _, err := a.Invocations.Get(ctx, ws, invocationID)
	if err != nil {
		return err
	}
	// The round's completion is stored before its bucketing job is queued:
	// read as running it, or an older round, the invocation is a stale
	// answer (a store between leaders), asked again rather than taken for
	// a round with nothing to group, which would leave bucketing pending
	// for good. A newer round running has its own job.
	if inv.GetJobsTotal() < round || (inv.GetJobsTotal() == round && inv.GetStatus() == domain.InvocationRunning) {
		return fmt.Errorf("%w: invocation %s read at round %d (%s), before the completion of round %d", aggregate.ErrStaleRead,
			invocationID, inv.GetJobsTotal(), inv.GetStatus(), round)
	}
	if inv.GetBucketingStatus() != domain.BucketingPending || inv.GetStatus() != domain.InvocationCompleted {
		return nil
	}
	groups, err := a.groups(ctx, inv)
	if err != nil {
		if delivered >= 3 {
			return a.finishBucketing(ctx, inv, "Grouping the results failed: "+err.Error())
		}
		return err
	}
	for _, g := range groups {
		id := fmt.Sprintf("%s#group#%d#%d", inv.GetInvocationId(), g.GetTestIndex(), inv.GetJobsTotal())
		meta := esproto.Meta(ctx, inv.GetWorkspaceId(), id, a.Now())
		subject, err := events.ResultGroupSubject(inv.GetWorkspaceId(), inv.GetInvocationId(), strconv.Itoa(int(g.GetTestIndex())))
		if err != nil {
			return err
		}
		e, err := esproto.Encode(ctx, meta, &testingv1.ResultGroupComputed{Meta: meta, InvocationId: inv.GetInvocationId(), Group: g})
		if err != nil {
			return err
		}
		if _, err := a.Runs.Publish(ctx, eventMessage(subject, id, e)); err != nil {
			return err
		}
	}
	return a.finishBucketing(ctx, inv, "")
}

// GiveUpGrouping records an invocation's bucketing as failed with reason.
func (a *App) GiveUpGrouping(ctx context.Context, ws, invocationID, reason string) error {
	inv, _, err := a.Invocations.Get(ctx, ws, invocationID)
	if err != nil {
		return err
	}
	return a.finishBucketing(ctx, inv, reason)
}

func (a *App) finishBucketing(ctx context.Context, inv *testingv1.Invocation, failure string) error {
	total := inv.GetJobsTotal()
	_, err := a.Invocations.Update(ctx, inv.GetWorkspaceId(), inv.GetInvocationId(), "", func(cur *testingv1.Invocation, meta *commonv1.EventMeta) (proto.Message, error) {
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

func (a *App) groups(ctx context.Context, inv *testingv1.Invocation) ([]*testingv1.ResultGroup, error) {
	repeat := int(max(inv.GetRepeatCount(), 1))
	// Results come in the order they were stored (which runner finished
	// first); BucketRuns takes them in run order, so the same runs always
	// give the same buckets and titles.
	type indexed struct {
		idx int
		run domain.BucketRun
	}
	perTest := make([][]indexed, len(inv.GetTests()))
	err := a.EachRunResult(ctx, inv, func(r *testingv1.RunResult) error {
		idx, err := domain.RunIndex(inv.GetInvocationId(), r.GetRunId())
		if err != nil || idx/repeat >= len(perTest) {
			return nil
		}
		perTest[idx/repeat] = append(perTest[idx/repeat], indexed{idx, domain.BucketRun{
			RunID: r.GetRunId(), Status: r.GetStatus(), Response: responseText(r.GetAgentResponsesJson()), Reason: r.GetRationaleSummary(),
		}})
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]*testingv1.ResultGroup, 0, len(perTest))
	for i, stored := range perTest {
		slices.SortFunc(stored, func(a, b indexed) int { return cmp.Compare(a.idx, b.idx) })
		runs := make([]domain.BucketRun, len(stored))
		for j, s := range stored {
			runs[j] = s.run
		}
		pt := inv.GetTests()[i]
		g := &testingv1.ResultGroup{TestId: pt.GetTestId(), TestName: pt.GetTestName(), WorkflowNodeId: pt.GetWorkflowNodeId(), TestIndex: int32(i)}
		for _, b := range domain.BucketRuns(runs) {
			g.Buckets = append(g.Buckets, &testingv1.Bucket{TestRunIds: b.RunIDs, Title: b.Title, Reason: b.Reason, Status: b.Status})
		}
		out = append(out, g)
	}
	return out, nil
}

// responseText is what a run's agent said and called, as one text to
// group by.
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
