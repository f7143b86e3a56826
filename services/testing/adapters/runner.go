package adapters

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/services/testing/app"
)

// NewRunnerPorts are a runner's ports on JetStream: the invocations'
// queues on TESTJOBS (given the runner's ackWait), results stored on
// TESTRUNS without waiting for each, counters on TESTCOUNTS. ackWait 0
// is RunQueueAckWait.
func NewRunnerPorts(js jetstream.JetStream, ackWait time.Duration, log *slog.Logger) app.RunnerPorts {
	if ackWait <= 0 {
		ackWait = RunQueueAckWait
	}
	return app.RunnerPorts{Queues: NewRunQueues(js, ackWait, log), Results: ResultStore{js: js}, Counts: NewCounters(js)}
}

// ResultStore is app.ResultStore: asynchronous publishes to TESTRUNS,
// whose futures complete in the order they were made.
type ResultStore struct{ js jetstream.JetStream }

// Store publishes m without waiting for the stream.
func (s ResultStore) Store(_ context.Context, m app.Message) (app.StoredResult, error) {
	fut, err := s.js.PublishMsgAsync(natsMsg(m))
	if err != nil {
		return nil, err
	}
	return pending{fut}, nil
}

type pending struct{ fut jetstream.PubAckFuture }

func (p pending) Wait() (bool, error) {
	select {
	case pa := <-p.fut.Ok():
		return pa.Duplicate, nil
	case err := <-p.fut.Err():
		return false, err
	}
}

// Incr adds n to a counter of TESTCOUNTS (a counter stream: the server
// adds the Nats-Incr header's value).
func (c *Counters) Incr(ctx context.Context, subject string, n int64) error {
	msg := nats.NewMsg(subject)
	msg.Header.Set("Nats-Incr", strconv.FormatInt(n, 10))
	_, err := c.js.PublishMsg(ctx, msg)
	return err
}
