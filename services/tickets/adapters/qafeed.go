package adapters

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/consume"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/tick"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// The QA worker's durable consumers, one per source, shared by every
// replica.
const (
	QARunsDurable       = "tickets-qa-failed-runs"
	QAPlatformDurable   = "tickets-qa-platform"
	QAClusteringDurable = "tickets-qa-clustering"
)

// replacedRunsDurable read every run's result (testruns.evt.>) to find
// the failed ones, before the runners published those again on their
// failure subjects: it cost the runners a quarter of their rate on a large
// invocation. A replica works through what it still holds, then deletes
// it (drainRetired).
const replacedRunsDurable = "tickets-qa-runs"

// QAFeed is app.QAFeed on JetStream: each source is a durable consumer
// worked through in batches (package consume); a batch is acknowledged
// once handled and redelivered with back-off when the handler fails.
type QAFeed struct {
	JS jetstream.JetStream
	// Batch bounds the messages of a batch (default 256).
	Batch int
	// AckWait is how long a batch a replica took may go unacknowledged
	// before another replica gets it (a killed replica's batch, or one a
	// lost node delivered to no one; default 10 s). What a live replica
	// holds is kept in hand meanwhile (package consume).
	AckWait time.Duration
	// Hold, when set, holds the feed while it says why not: the QA
	// worker writes tickets (consume.Spec.Hold).
	Hold func() error
}

var _ app.QAFeed = QAFeed{}

// qaSource is where a source's messages are and how they are read.
type qaSource struct {
	stream, durable string
	filters         []string
	protobuf        bool // its bodies are protobuf events
	runs            bool // its messages state their run's status (events.HeaderRunStatus)
	tickets         bool // its messages carry tickets, decoded as app.DecodesTicket says
}

func qaSourceOf(s app.QASource) (qaSource, bool) {
	switch s {
	case app.QARuns:
		return qaSource{stream: events.TestRunsStream, durable: QARunsDurable, filters: []string{events.RunFailuresAll}, protobuf: true, runs: true}, true
	case app.QAPlatform:
		var filters []string
		for _, name := range app.QAPlatformEvents {
			filters = append(filters, "platform.evt.*."+name)
		}
		return qaSource{stream: events.PlatformStream, durable: QAPlatformDurable, filters: filters}, true
	case app.QATickets:
		return qaSource{stream: events.TicketsStream, durable: QAClusteringDurable, filters: []string{events.TicketsAll}, protobuf: true, tickets: true}, true
	}
	return qaSource{}, false
}

// QAConsumers are the streams and durables of the sources, for the
// process's consumer metrics.
func QAConsumers() (streams, durables []string) {
	for _, s := range []app.QASource{app.QARuns, app.QAPlatform, app.QATickets} {
		src, _ := qaSourceOf(s)
		streams, durables = append(streams, src.stream), append(durables, src.durable)
	}
	return streams, durables
}

// Follow implements app.QAFeed. The streams belong to other services,
// which may start later: it waits for the stream first.
func (f QAFeed) Follow(ctx context.Context, source app.QASource, h func(context.Context, []app.QAMessage) error) error {
	src, ok := qaSourceOf(source)
	if !ok {
		return fmt.Errorf("qa feed: no source %q", source)
	}
	if _, err := eventstore.WaitForStream(ctx, f.JS, src.stream); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	batch, ackWait := f.Batch, f.AckWait
	if batch <= 0 {
		batch = 256
	}
	if ackWait <= 0 {
		ackWait = 10 * time.Second
	}
	spec := consume.Spec{Stream: src.stream, Durable: src.durable, FilterSubjects: src.filters, AckWait: ackWait, MaxBatch: batch, Hold: f.Hold}
	handle := func(ctx context.Context, msgs []jetstream.Msg) error {
		out := make([]app.QAMessage, len(msgs))
		for i, m := range msgs {
			out[i] = qaMessage(m, src)
		}
		return h(ctx, out)
	}
	if source == app.QARuns {
		retired := spec
		retired.Durable, retired.FilterSubjects, retired.Existing = replacedRunsDurable, nil, true
		if err := drainRetired(ctx, f.JS, retired, handle); err != nil {
			return err
		}
	}
	return consume.Batches(ctx, f.JS, spec, handle)
}

// drainRetired works through what the retired durable s names still
// holds (nothing when it is gone), then deletes it, before the source is
// read from its new durable: a failed run the runners stored before they
// published failure notices is still ticketed, and one handled from both
// is recorded once (app.RecordTestFailures keeps a run once). Replicas
// share it as any durable; the first to find it empty deletes it.
//
// The runners of a deployment split into processes are upgraded first:
// a failed run stored by a runner without notices once the durable is
// gone raises no ticket.
func drainRetired(ctx context.Context, js jetstream.JetStream, s consume.Spec, h consume.Handler) error {
	cons, err := js.Consumer(ctx, s.Stream, s.Durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("consumer %s: %w", s.Durable, err)
	}
	dctx, done := context.WithCancel(ctx)
	defer done()
	go tick.Every(dctx, retiredCheck, func() { // done once nothing is left to pull nor held
		info, err := cons.Info(dctx)
		if errors.Is(err, jetstream.ErrConsumerNotFound) || err == nil && info.NumPending == 0 && info.NumAckPending == 0 {
			done()
		}
	})
	if err := consume.Batches(dctx, js, s, h); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return err
	}
	if ctx.Err() != nil {
		return nil
	}
	if err := js.DeleteConsumer(ctx, s.Stream, s.Durable); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("consumer %s: %w", s.Durable, err)
	}
	return nil
}

// retiredCheck is how often a retired durable is checked for being
// drained.
const retiredCheck = 500 * time.Millisecond

// qaMessage is m as the QA worker reads it. Its sequence and store time
// come first: a body that does not decode is still a message of the
// stream, which the worker skips by its sequence like any other.
func qaMessage(m jetstream.Msg, src qaSource) app.QAMessage {
	out := app.QAMessage{Subject: m.Subject(), Data: m.Data(), Traceparent: m.Headers().Get(events.HeaderTraceparent)}
	meta, err := m.Metadata()
	if err != nil {
		out.Err = err
		return out
	}
	out.Seq, out.Stored = meta.Sequence.Stream, meta.Timestamp
	if src.runs {
		out.RunStatus = m.Headers().Get(events.HeaderRunStatus)
	}
	decode := src.protobuf
	if src.runs {
		decode = decode && app.DecodesRun(out.RunStatus)
	}
	if src.tickets {
		decode = decode && app.DecodesTicket(m.Headers().Get(events.HeaderEventType), out.Data)
	}
	if decode {
		out.Event, out.Err = eventstore.DecodeMsg(m)
	}
	return out
}
