package adapters

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/services/testing/app"
)

// Each invocation has a queue of its own on TESTJOBS: a durable pull
// consumer filtered on testjobs.<ws>.<invocation>.> (a work-queue stream
// takes several consumers whose filters do not overlap). The enqueuer
// creates it before it queues the invocation's jobs; runners list the
// queues, choose whose jobs they take next (app.Scheduler), delete a queue
// that stayed empty for RunQueueEmptyFor, and re-create the queue of jobs
// left without one.

// RunQueuePrefix begins the name of every invocation's queue.
const RunQueuePrefix = "runs-"

// RunQueueAckWait is the AckWait a queue is created with; runners set
// their own (VOICEAI_RUNNER_ACK_WAIT) when they first list it.
const RunQueueAckWait = 30 * time.Second

// RunQueueEmptyFor is how long a queue stays with no job, waiting or
// taken, before a runner deletes it. A queue deleted while its
// invocation was being resubmitted is re-created (RunQueues.Refresh).
const RunQueueEmptyFor = time.Minute

// runQueueMaxAckPending bounds one invocation's jobs out at once.
const runQueueMaxAckPending = 100_000

// RunQueueName is the consumer name of the invocation's queue: a hash,
// since ids may hold characters a consumer name may not.
func RunQueueName(workspaceID, invocationID string) string {
	sum := sha256.Sum256([]byte(workspaceID + "\x00" + invocationID))
	return RunQueuePrefix + hex.EncodeToString(sum[:16])
}

func runQueueConfig(workspaceID, invocationID string, ackWait time.Duration) (jetstream.ConsumerConfig, error) {
	filter, err := events.TestJobQueueFilter(workspaceID, invocationID)
	if err != nil {
		return jetstream.ConsumerConfig{}, err
	}
	return jetstream.ConsumerConfig{
		Durable: RunQueueName(workspaceID, invocationID), FilterSubject: filter,
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait, MaxDeliver: -1, MaxAckPending: runQueueMaxAckPending,
		Description: "run jobs of invocation " + invocationID,
	}, nil
}

// EnsureRunQueue creates the invocation's queue unless it exists (with
// whatever AckWait the runners gave it).
func EnsureRunQueue(ctx context.Context, js jetstream.JetStream, workspaceID, invocationID string) error {
	cfg, err := runQueueConfig(workspaceID, invocationID, RunQueueAckWait)
	if err != nil {
		return err
	}
	_, err = js.CreateConsumer(ctx, events.TestJobsStream, cfg)
	if errors.Is(err, jetstream.ErrConsumerExists) {
		return nil
	}
	return err
}

// queueOf is the workspace and invocation of a job subject
// (testjobs.<ws>.<inv>.…) or of a queue's filter.
func queueOf(subject string) (ws, inv string, ok bool) {
	parts := strings.SplitN(subject, ".", 4)
	if len(parts) < 4 || parts[0] != "testjobs" {
		return "", "", false
	}
	return parts[1], parts[2], true
}

// RunQueues is the runners' view of the invocations' queues.
type RunQueues struct {
	js      jetstream.JetStream
	ackWait time.Duration
	log     *slog.Logger
	jobs    *eventstore.KeptStream

	mu       sync.Mutex
	queues   []app.RunQueue
	handles  map[string]jetstream.Consumer // by queue name
	probe    map[string]time.Time          // when a queue with only taken jobs may be asked again
	refresh  time.Time                     // when the queues were last listed
	suspect  int                           // listings in a row where jobs had no queue
	repaired time.Time                     // when queues were last re-created
}

// NewRunQueues lists the queues of TESTJOBS; the queues a runner with
// AckWait ackWait takes jobs from get that AckWait.
func NewRunQueues(js jetstream.JetStream, ackWait time.Duration, log *slog.Logger) *RunQueues {
	return &RunQueues{js: js, ackWait: ackWait, log: log, jobs: keptTestJobs(js, log), handles: map[string]jetstream.Consumer{}, probe: map[string]time.Time{}}
}

// Queues are the queues with jobs waiting as last listed, less the jobs
// taken since.
func (r *RunQueues) Queues() []app.RunQueue {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]app.RunQueue(nil), r.queues...)
}

// Listed is when the queues were last listed.
func (r *RunQueues) Listed() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refresh
}

// Refresh lists the queues again (one listing of TESTJOBS's consumers,
// and one stream info), making TESTJOBS again if it was deleted. On the
// way it gives a queue this runner's
// AckWait, deletes a queue empty for RunQueueEmptyFor, and when jobs
// stay on the stream that no queue accounts for (their queue was
// deleted as they were queued), re-creates their queues.
//
// held is how many of a queue's jobs this runner holds.
func (r *RunQueues) Refresh(ctx context.Context, held func(ws, inv string) int) error {
	now := time.Now()
	stream, err := eventstore.StreamOf(ctx, r.js, events.TestJobsStream)
	if err != nil {
		r.jobs.Heal(err) // deleted: made again, for the next listing
		return err
	}
	sinfo, err := stream.Info(ctx)
	if err != nil {
		return err
	}
	var queues []app.RunQueue
	have := map[string]bool{}
	passed := map[string]uint64{} // an empty queue: the last job it delivered
	var accounted uint64
	lister := stream.ListConsumers(ctx)
	for info := range lister.Info() {
		if !strings.HasPrefix(info.Name, RunQueuePrefix) {
			continue
		}
		ws, inv, ok := queueOf(info.Config.FilterSubject)
		if !ok {
			continue
		}
		have[info.Name] = true
		accounted += info.NumPending + uint64(info.NumAckPending)
		if info.Config.AckWait != r.ackWait {
			cfg := info.Config
			cfg.AckWait = r.ackWait
			if _, err := r.js.UpdateConsumer(ctx, events.TestJobsStream, cfg); err != nil {
				r.log.Warn("runner: setting a run queue's ack wait", "queue", info.Name, "err", err)
			}
		}
		if info.NumPending == 0 && info.NumAckPending == 0 {
			passed[info.Name] = info.Delivered.Stream
			if idleFor(info) >= RunQueueEmptyFor {
				if err := r.js.DeleteConsumer(ctx, events.TestJobsStream, info.Name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
					r.log.Warn("runner: deleting an empty run queue", "queue", info.Name, "err", err)
				}
			}
			continue
		}
		// Jobs given back (a failed run, a worker that died) wait among the
		// taken ones: those this runner does not hold may be waiting. A
		// queue found with none is asked again only after probeEvery.
		waiting := int(min(info.NumPending, 1<<30))
		if others := info.NumAckPending - held(ws, inv); others > 0 && now.After(r.probe[info.Name]) {
			waiting += others
		}
		if waiting > 0 {
			queues = append(queues, app.RunQueue{Workspace: ws, Invocation: inv, Waiting: waiting})
		}
	}
	if err := lister.Err(); err != nil {
		return err
	}
	// The stream info was read first: a job acked since makes the stream
	// look fuller than its queues; only jobs unaccounted for twice in a
	// row, at most every RunQueueEmptyFor/2, make a runner look for them.
	r.mu.Lock()
	if sinfo.State.Msgs > accounted {
		r.suspect++
	} else {
		r.suspect = 0
	}
	repair := r.suspect >= 2 && time.Since(r.repaired) >= RunQueueEmptyFor/2
	if repair {
		r.repaired = time.Now()
	}
	for name := range r.handles {
		if !have[name] {
			delete(r.handles, name)
		}
	}
	for name := range r.probe {
		if !have[name] {
			delete(r.probe, name)
		}
	}
	r.queues, r.refresh = queues, time.Now()
	r.mu.Unlock()
	if repair {
		return r.repair(ctx, stream, have, passed)
	}
	return nil
}

// repair re-creates the queue of every invocation with jobs and none,
// and of every one whose queue, listed empty, had already delivered one
// of its jobs still stored: passed is, for each queue listed with no job
// waiting or taken, the stream sequence of the last job it delivered.
//
// A queue can lose count so across a fault of the cluster (a consumer
// leader lost between a delivery and its replication, a job's ack
// applied to the queue but not to the stream): the job stays stored
// and the queue never delivers it again, so its invocation would wait
// until the queue, idle, was deleted and made anew minutes later. A job
// run twice this way is stored once (results are deduplicated by run
// and attempt).
func (r *RunQueues) repair(ctx context.Context, stream jetstream.Stream, have map[string]bool, passed map[string]uint64) error {
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter(events.TestJobsAll))
	if err != nil {
		return err
	}
	done := map[string]bool{}
	for subject := range info.State.Subjects {
		ws, inv, ok := queueOf(subject)
		name := RunQueueName(ws, inv)
		if !ok || done[name] {
			continue
		}
		done[name] = true
		if !have[name] {
			r.log.Warn("runner: re-creating the queue of jobs left without one", "workspace", ws, "invocation", inv)
			if err := EnsureRunQueue(ctx, r.js, ws, inv); err != nil {
				return err
			}
			continue
		}
		if last, empty := passed[name]; empty {
			if err := r.remake(ctx, ws, inv, last); err != nil {
				return err
			}
		}
	}
	return nil
}

// remake deletes and makes again the invocation's queue when it passed
// (delivered up to stream sequence last) a job still stored.
func (r *RunQueues) remake(ctx context.Context, ws, inv string, last uint64) error {
	filter, err := events.TestJobQueueFilter(ws, inv)
	if err != nil {
		return err
	}
	first, err := eventstore.GetMsg(ctx, r.js, events.TestJobsStream, eventstore.MsgRequest{Seq: 1, NextFor: filter})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if first.Sequence > last {
		return nil // queued after the listing: the queue will deliver it
	}
	r.log.Warn("runner: re-creating a queue that passed a job still stored", "workspace", ws, "invocation", inv, "job_seq", first.Sequence, "delivered_up_to", last)
	if err := r.js.DeleteConsumer(ctx, events.TestJobsStream, RunQueueName(ws, inv)); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return err
	}
	return EnsureRunQueue(ctx, r.js, ws, inv)
}

// idleFor is how long the queue has had no delivery, ack or creation,
// by the server's clock.
func idleFor(info *jetstream.ConsumerInfo) time.Duration {
	last := info.Created
	for _, t := range []*time.Time{info.Delivered.Last, info.AckFloor.Last} {
		if t != nil && t.After(last) {
			last = *t
		}
	}
	if info.TimeStamp.IsZero() {
		return 0
	}
	return info.TimeStamp.Sub(last)
}

// Take takes up to n of the queue's waiting jobs without waiting for
// more, and counts them off the queue's listing (all of them when it had
// fewer: another runner took them).
//
// This is the one pull-by-capacity site of the tree: a runner takes only
// as many jobs as it has free slots (app.Scheduler), from the queue the
// scheduler chose, so it pulls with FetchNoWait rather than through
// pkg/consume, which keeps a consumer's messages flowing.
func (r *RunQueues) Take(ctx context.Context, q app.RunQueue, n int) ([]app.TakenJob, error) {
	name := RunQueueName(q.Workspace, q.Invocation)
	r.mu.Lock()
	cons := r.handles[name]
	r.mu.Unlock()
	var err error
	if cons == nil {
		if cons, err = r.js.Consumer(ctx, events.TestJobsStream, name); err != nil {
			r.taken(q, n, 0)
			return nil, err
		}
		r.mu.Lock()
		r.handles[name] = cons
		r.mu.Unlock()
	}
	batch, err := cons.FetchNoWait(n)
	if err != nil {
		r.taken(q, n, 0)
		return nil, err
	}
	var jobs []app.TakenJob
	for m := range batch.Messages() {
		jobs = append(jobs, takenJob{m})
	}
	r.taken(q, n, len(jobs))
	if err := batch.Error(); err != nil && len(jobs) == 0 && !errors.Is(err, jetstream.ErrNoMessages) {
		return nil, err
	}
	return jobs, nil
}

// Notify calls queued on every notice an enqueuer publishes when it
// queued jobs (a plain NATS subject: a missed notice costs a runner at
// most its idle listing interval).
func (r *RunQueues) Notify(queued func()) (stop func(), err error) {
	sub, err := r.js.Conn().Subscribe(events.TestJobsQueuedNotify, func(*nats.Msg) { queued() })
	if err != nil {
		return nil, err
	}
	return func() { _ = sub.Unsubscribe() }, nil
}

// takenJob is a job delivered by its queue's consumer.
type takenJob struct{ m jetstream.Msg }

func (j takenJob) Subject() string     { return j.m.Subject() }
func (j takenJob) Data() []byte        { return j.m.Data() }
func (j takenJob) Traceparent() string { return j.m.Headers().Get(events.HeaderTraceparent) }
func (j takenJob) Delivered() uint64 {
	if md, _ := j.m.Metadata(); md != nil {
		return md.NumDelivered
	}
	return 1
}
func (j takenJob) Queued() time.Time {
	if md, _ := j.m.Metadata(); md != nil {
		return md.Timestamp
	}
	return time.Time{}
}
func (j takenJob) Done() error                             { return j.m.Ack() }
func (j takenJob) DoneConfirmed(ctx context.Context) error { return j.m.DoubleAck(ctx) }
func (j takenJob) Retry(delay time.Duration) error         { return j.m.NakWithDelay(delay) }
func (j takenJob) Drop() error                             { return j.m.Term() }
func (j takenJob) Working() error                          { return j.m.InProgress() }

// probeEvery is how often a runner asks a queue whose jobs are all taken
// whether one was given back.
const probeEvery = time.Second

func (r *RunQueues) taken(q app.RunQueue, asked, got int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if got < asked {
		r.probe[RunQueueName(q.Workspace, q.Invocation)] = time.Now().Add(probeEvery)
	}
	for i := range r.queues {
		if r.queues[i].Workspace == q.Workspace && r.queues[i].Invocation == q.Invocation {
			if got < asked {
				r.queues[i].Waiting = 0
			} else {
				r.queues[i].Waiting = max(r.queues[i].Waiting-got, 0)
			}
		}
	}
}
