package app

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/tracing"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// EnqueuerConsumer queues the runs of new and resubmitted invocations.
const EnqueuerConsumer = "testing-enqueuer"

// RunEnqueuer queues run jobs for every invocation_created and
// invocation_resubmitted event, until ctx ends. A durable consumer makes
// it survive crashes; job message ids make re-queuing harmless.
func (a *App) RunEnqueuer(ctx context.Context) error {
	cons, err := eventstore.EnsureConsumer(ctx, a.JS, events.TestingStream, jetstream.ConsumerConfig{
		Durable: EnqueuerConsumer, AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute,
		FilterSubject: events.TestingInvocationsAll, MaxAckPending: 16,
	})
	if err != nil {
		return err
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(16))
	if err != nil {
		return err
	}
	go func() { <-ctx.Done(); it.Stop() }()
	for {
		m, err := it.Next()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return nil
			}
			a.Log.Warn("enqueuer: next", "err", err)
			continue
		}
		// What is logged about the invocation names the invoking request's trace.
		mctx := tracing.Extract(ctx, m.Headers().Get(events.HeaderTraceparent))
		if err := a.enqueue(mctx, m); err != nil {
			a.Log.ErrorContext(mctx, "enqueuer: queue runs", "subject", m.Subject(), "err", err)
			_ = m.NakWithDelay(time.Second)
			continue
		}
		_ = m.Ack()
	}
}

func (a *App) enqueue(ctx context.Context, m jetstream.Msg) error {
	msg, err := eventstore.DecodeMsg(m)
	if err != nil {
		return err
	}
	switch ev := msg.(type) {
	case *testingv1.InvocationCreated:
		inv := ev.GetInvocation()
		total := len(inv.GetTests()) * int(max(inv.GetRepeatCount(), 1))
		per := domain.RunsPerJob(total)
		jobs := (total + per - 1) / per
		if err := a.publishJobs(ctx, m, inv, jobs, func(i int) (string, int, int) {
			return domain.RunID(inv.GetInvocationId(), i*per), i * per, min(per, total-i*per)
		}, 1); err != nil {
			return err
		}
		return a.MarkQueued(ctx, inv.GetWorkspaceId(), inv.GetInvocationId(), inv.GetJobsTotal())
	case *testingv1.InvocationResubmitted:
		inv := ev.GetInvocation()
		rs := inv.GetResubmissions()
		last := rs[len(rs)-1]
		if err := a.publishJobs(ctx, m, inv, len(last.GetRunIds()), func(i int) (string, int, int) {
			id := last.GetRunIds()[i]
			idx, _ := domain.RunIndex(inv.GetInvocationId(), id)
			return id, idx, 1
		}, last.GetAttempt()); err != nil {
			return err
		}
		return a.MarkQueued(ctx, inv.GetWorkspaceId(), inv.GetInvocationId(), inv.GetJobsTotal())
	}
	return nil
}

// publishJobs publishes n jobs asynchronously, telling JetStream the event
// is still being worked on while a large invocation is queued. job(i) is
// the i-th job's first run (its id and index) and its number of runs.
func (a *App) publishJobs(ctx context.Context, m jetstream.Msg, inv *testingv1.Invocation, n int, job func(int) (string, int, int), attempt int32) error {
	repeat := int(max(inv.GetRepeatCount(), 1))
	lastBeat := time.Now()
	var futures []jetstream.PubAckFuture
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
		id, idx, runs := job(i)
		data, _ := proto.Marshal(&testingv1.RunJob{WorkspaceId: inv.GetWorkspaceId(), InvocationId: inv.GetInvocationId(), Kind: "run",
			RunId: id, TestIndex: int32(idx / repeat), RepeatIndex: int32(idx % repeat), Attempt: attempt, RunCount: int32(runs)})
		subject, err := events.TestJobSubject(inv.GetWorkspaceId(), inv.GetInvocationId(), id)
		if err != nil {
			return err
		}
		msg := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
		msg.Header.Set(jetstream.MsgIDHeader, id+"#"+strconv.Itoa(int(attempt)))
		if tp := m.Headers().Get(events.HeaderTraceparent); tp != "" {
			msg.Header.Set(events.HeaderTraceparent, tp) // the runs continue the invoking request's trace
		}
		f, err := a.JS.PublishMsgAsync(msg)
		if err != nil {
			return err
		}
		futures = append(futures, f)
		if len(futures) >= 2048 {
			if err := flush(); err != nil {
				return err
			}
		}
		if time.Since(lastBeat) > 10*time.Second {
			_ = m.InProgress()
			lastBeat = time.Now()
		}
	}
	return flush()
}
