package adapters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/consume"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/ids"
	"github.com/voiceai-platform/voiceai/services/testing/app"
)

// JetStreamPorts are the testing app's ports on JetStream: the streams
// EnsureStreams creates. While hold says why not (may be nil), the
// invocation feed hands out nothing: its enqueuer writes jobs.
func JetStreamPorts(js jetstream.JetStream, log *slog.Logger, hold func() error) app.Ports {
	feed := NewInvocationFeed(js, log)
	feed.Hold = hold
	return app.Ports{
		Testing:     eventstore.New(js, events.TestingStream),
		Agents:      eventstore.New(js, events.AgentsStream),
		Runs:        NewRunsLog(js),
		Jobs:        NewJobQueue(js, log),
		Counts:      NewCounters(js),
		Invocations: feed,
	}
}

// natsMsg is m as published: its id in the header the stream
// deduplicates by.
func natsMsg(m app.Message) *nats.Msg {
	msg := &nats.Msg{Subject: m.Subject, Data: m.Data, Header: nats.Header{}}
	for k, v := range m.Header {
		msg.Header[k] = append([]string(nil), v...)
	}
	msg.Header.Set(jetstream.MsgIDHeader, m.ID)
	return msg
}

// RunsLog is app.RunsLog on stream TESTRUNS.
type RunsLog struct {
	js    jetstream.JetStream
	store *eventstore.Store
}

// NewRunsLog reads and writes stream TESTRUNS.
func NewRunsLog(js jetstream.JetStream) *RunsLog {
	return &RunsLog{js: js, store: eventstore.New(js, events.TestRunsStream)}
}

// Publish stores m; the stream's duplicate window drops a retried id.
func (l *RunsLog) Publish(ctx context.Context, m app.Message) (bool, error) {
	ack, err := eventstore.Publish(ctx, l.js, natsMsg(m))
	if err != nil {
		return false, err
	}
	return ack.Duplicate, nil
}

// Last is subject's newest record (one direct get).
func (l *RunsLog) Last(ctx context.Context, subject string) (app.Record, bool, error) {
	return l.store.Last(ctx, subject)
}

// At is the record at seq.
func (l *RunsLog) At(ctx context.Context, seq uint64) (app.Record, error) {
	return l.store.At(ctx, seq)
}

// EachLast reads the last record per subject.
func (l *RunsLog) EachLast(ctx context.Context, filter string, fn func(app.Record) error) error {
	return eachMsg(ctx, l.js, events.TestRunsStream, filter, jetstream.DeliverLastPerSubjectPolicy, false, 500, fn)
}

// EachHeader reads every record, headers only: decoding 250,000 results
// made completing a large invocation take seconds.
func (l *RunsLog) EachHeader(ctx context.Context, filter string, fn func(app.Record) error) error {
	return eachMsg(ctx, l.js, events.TestRunsStream, filter, jetstream.DeliverAllPolicy, true, 10_000, fn)
}

// readIdle is how long a read waits for its next message before it asks
// its consumer whether the rest was lost on the way.
const readIdle = 2 * time.Second

// errReadLost ends a read that lost messages on the way (the connection
// dropped them, or broke); read again.
type errReadLost struct{ why string }

func (e errReadLost) Error() string     { return "runs log read lost messages: " + e.why }
func (e errReadLost) Unavailable() bool { return true }

// ReadConsumerInactive is how long after its last pull the server deletes
// a read's consumer that its reader did not (the delete timed out on a
// loaded server, or the process died mid-read).
const ReadConsumerInactive = 30 * time.Second

// eachMsg calls fn with the messages of stream matching filter from
// deliver on, in stream order, batch at a time; with headersOnly they
// carry their headers only (and Nats-Msg-Size), not their data.
//
// It ends, whatever happens on the way: with ctx; with an error when a
// message is missing (a delivery's consumer sequence skips one, or the
// consumer has delivered more than arrived and has nothing left), since a
// read that waited for the "nothing pending" of a lost message would wait
// forever. Its consumer is deleted when it ends.
func eachMsg(ctx context.Context, js jetstream.JetStream, stream, filter string, deliver jetstream.DeliverPolicy, headersOnly bool,
	batch int, fn func(app.Record) error) error {
	// Many reads find nothing (the result groups or labels of a new
	// invocation): one small read says so, with no consumer made.
	if _, err := eventstore.GetMsg(ctx, js, stream, eventstore.MsgRequest{Seq: 1, NextFor: filter}); errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	// An ephemeral consumer, deleted when done: a stream holds at most
	// 1,000 consumers by default, and readers come often. It is named
	// here, so that one whose creation was cut short by ctx (the server
	// may have made it all the same) is deleted too, not left to its
	// inactivity threshold.
	name := ids.New("read")
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = js.DeleteConsumer(dctx, stream, name)
	}()
	cons, err := js.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{
		Name: name, FilterSubject: filter, DeliverPolicy: deliver, AckPolicy: jetstream.AckNonePolicy,
		InactiveThreshold: ReadConsumerInactive, MemoryStorage: true, Replicas: 1, HeadersOnly: headersOnly,
	})
	if err != nil {
		return err
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return err
	}
	if info.NumPending == 0 {
		return nil
	}
	// By count alone: with a byte limit too, the iterator pulled more than
	// its buffer of batch messages holds, and the client dropped the rest
	// (a slow consumer) in the middle of a 250,000-run read.
	it, err := cons.Messages(jetstream.PullMaxMessages(batch))
	if err != nil {
		return err
	}
	defer it.Stop()
	var seen uint64 // the consumer sequence of the last message read
	quiet := 0      // idle waits in a row with the rest delivered and not here
	for {
		m, err := next(ctx, it)
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			lost, err := lostTail(ctx, cons, seen)
			if err != nil {
				return err
			}
			if !lost {
				quiet = 0
				continue
			}
			// Twice, so a message merely slow on a loaded machine is not
			// taken for lost.
			if quiet++; quiet >= 2 {
				return errReadLost{fmt.Sprintf("the consumer delivered past %d and has nothing left", seen)}
			}
			continue
		}
		if err != nil {
			return err
		}
		md, err := m.Metadata()
		if err != nil {
			return err
		}
		if md.Sequence.Consumer != seen+1 {
			return errReadLost{fmt.Sprintf("delivery %d came after %d", md.Sequence.Consumer, seen)}
		}
		seen, quiet = md.Sequence.Consumer, 0
		rec, err := eventstore.RecordFromMsg(m)
		if err != nil {
			return err
		}
		if err := fn(rec); err != nil {
			return err
		}
		if md.NumPending == 0 {
			return nil
		}
	}
}

// next waits readIdle at most for the iterator's next message.
func next(ctx context.Context, it jetstream.MessagesContext) (jetstream.Msg, error) {
	ctx, cancel := context.WithTimeout(ctx, readIdle)
	defer cancel()
	return it.Next(jetstream.NextContext(ctx))
}

// lostTail reports whether a quiet read's consumer has delivered past
// seen with nothing left to deliver: what it delivered has not arrived.
func lostTail(ctx context.Context, cons jetstream.Consumer, seen uint64) (bool, error) {
	info, err := cons.Info(ctx)
	if err != nil {
		return false, err
	}
	return info.NumPending == 0 && info.Delivered.Consumer > seen, nil
}

// JobQueue is app.JobQueue on the work-queue stream TESTJOBS.
type JobQueue struct {
	js   jetstream.JetStream
	kept *eventstore.KeptStream
}

// NewJobQueue queues on stream TESTJOBS, making it again when it finds
// it deleted.
func NewJobQueue(js jetstream.JetStream, log *slog.Logger) *JobQueue {
	return &JobQueue{js: js, kept: keptTestJobs(js, log)}
}

// Enqueue publishes asynchronously, 2,048 acks awaited at a time; the
// stream's duplicate window (JobsDedupWindow) drops a re-queued id. Each
// invocation's queue is created before its first job is published, and
// idle runners are told (TestJobsQueuedNotify) once the jobs are stored.
func (q *JobQueue) Enqueue(ctx context.Context, n int, job func(int) (app.Message, error)) error {
	err := q.enqueue(ctx, n, job)
	if err != nil {
		q.kept.Heal(err) // the enqueuer tries again
	}
	return err
}

func (q *JobQueue) enqueue(ctx context.Context, n int, job func(int) (app.Message, error)) error {
	var futures []jetstream.PubAckFuture
	queues := map[string]bool{}
	defer func() {
		if len(queues) > 0 {
			_ = q.js.Conn().Publish(events.TestJobsQueuedNotify, nil)
		}
	}()
	flush := func() error {
		for _, f := range futures {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				return err
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		futures = futures[:0]
		return nil
	}
	for i := range n {
		m, err := job(i)
		if err != nil {
			return err
		}
		if ws, inv, ok := queueOf(m.Subject); ok && !queues[ws+"."+inv] {
			if err := EnsureRunQueue(ctx, q.js, ws, inv); err != nil {
				return err
			}
			queues[ws+"."+inv] = true
		}
		f, err := q.js.PublishMsgAsync(natsMsg(m))
		if err != nil {
			return err
		}
		futures = append(futures, f)
		if len(futures) >= 2048 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// Purge drops the waiting jobs matching filter.
func (q *JobQueue) Purge(ctx context.Context, filter string) error {
	stream, err := eventstore.StreamOf(ctx, q.js, events.TestJobsStream)
	if err != nil {
		return err
	}
	return stream.Purge(ctx, jetstream.WithPurgeSubject(filter))
}

// Waiting reports whether a job matching filter is on the queue (a job
// leaves the work queue only once acked).
//
// Whether an invocation has jobs left is what completion checks ask, ten
// times a second per runner, and the answer is almost always yes. The
// invocation's queue (its consumer, made before its first job) counts the
// jobs not yet taken and those taken and not yet acked, so asking it is
// one small read, where asking the stream for the first of the jobs makes
// the server walk the subject of every job left: for an invocation of
// 250,000 runs, the largest single cost of completing it. The queue learns
// of a new job a moment after the stream stored it, so only its "yes" is
// taken (at worst a moment stale, which puts a completion off until the
// next check); "none" is the stream's to say, which then has few jobs, if
// any, to walk.
func (q *JobQueue) Waiting(ctx context.Context, filter string) (bool, error) {
	if ws, inv, ok := invocationJobs(filter); ok && q.queueHolds(ctx, ws, inv) > 0 {
		return true, nil
	}
	_, err := eventstore.GetMsg(ctx, q.js, events.TestJobsStream, eventstore.MsgRequest{Seq: 1, NextFor: filter})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil
	}
	return err == nil, err
}

// queueHolds is how many jobs the invocation's queue counts, waiting or
// taken; 0 when it cannot say (no queue, no answer): the stream decides.
func (q *JobQueue) queueHolds(ctx context.Context, ws, inv string) uint64 {
	cons, err := q.js.Consumer(ctx, events.TestJobsStream, RunQueueName(ws, inv)) // one consumer info
	if err != nil {
		return 0
	}
	info := cons.CachedInfo()
	return info.NumPending + uint64(info.NumAckPending)
}

// invocationJobs is the workspace and invocation of filter when it is
// every job of one invocation (events.TestJobsOfInvocation).
func invocationJobs(filter string) (ws, inv string, ok bool) {
	ws, inv, ok = queueOf(filter)
	if !ok {
		return "", "", false
	}
	want, err := events.TestJobsOfInvocation(ws, inv)
	return ws, inv, err == nil && want == filter
}

// Counters is app.Counters on the counter stream TESTCOUNTS.
type Counters struct{ js jetstream.JetStream }

// NewCounters reads stream TESTCOUNTS.
func NewCounters(js jetstream.JetStream) *Counters { return &Counters{js: js} }

// Count reads the counter's last value ({"val":"n"}).
func (c *Counters) Count(ctx context.Context, subject string) (int64, error) {
	m, err := eventstore.GetMsg(ctx, c.js, events.TestCountsStream, eventstore.MsgRequest{LastFor: subject})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var body struct {
		Val string `json:"val"`
	}
	if err := json.Unmarshal(m.Data, &body); err != nil {
		return 0, err
	}
	return strconv.ParseInt(body.Val, 10, 64)
}

// InvocationFeed is app.InvocationFeed: the durable consumer
// EnqueuerConsumer over the invocation events of stream TESTING.
type InvocationFeed struct {
	js  jetstream.JetStream
	log *slog.Logger
	// Hold, when set, holds the feed while it says why not: the
	// enqueuer writes jobs (consume.Spec.Hold).
	Hold func() error
}

// NewInvocationFeed follows stream TESTING's invocation events.
func NewInvocationFeed(js jetstream.JetStream, log *slog.Logger) *InvocationFeed {
	return &InvocationFeed{js: js, log: log}
}

// Follow acks an event handled, and redelivers a failed one with
// pkg/consume's back-off; one not acked within 10 s (its process died,
// or a lost node delivered it to no one) is redelivered too: one being
// handled, however long, is kept in hand (package consume). Events come one at a time: each is a batch of
// one.
func (f *InvocationFeed) Follow(ctx context.Context, handle func(context.Context, app.Record, func()) error) error {
	return consume.Batches(ctx, f.js, consume.Spec{
		Stream: events.TestingStream, Durable: EnqueuerConsumer, FilterSubjects: []string{events.TestingInvocationsAll},
		AckWait: 10 * time.Second, MaxBatch: 1, MaxAckPending: 16, Log: f.log, Hold: f.Hold, // the enqueuer logs its failures
	}, func(ctx context.Context, batch []jetstream.Msg) error {
		m := batch[0]
		rec, err := eventstore.RecordFromMsg(m)
		if err != nil { // the enqueuer never sees it: say so here
			f.log.Warn("enqueuer: an unreadable invocation event, will retry", "subject", m.Subject(), "err", err)
			return err
		}
		return handle(ctx, rec, func() { _ = m.InProgress() })
	})
}
