// Package qaworker turns what goes wrong into triage tickets, and clusters
// them. It follows three streams through durable consumers shared by
// every replica, so workers scale out and a killed one loses nothing: a
// message is acked only once its ticket is written, and every write is
// idempotent, so a redelivered message changes nothing twice.
//
//   - TESTRUNS: failed runs (the judge said failure) keep one ticket per
//     agent and failing test (app.RecordTestFailures).
//   - PLATFORM: escalation_triggered raises a ticket of source agent on the
//     conversation, conversation_ended after an escalation or with negative
//     sentiment one of source qa; a conversation's active ticket is joined
//     instead (app.RaiseFromConversation).
//   - TICKETS: a ticket that needs clustering has its agent's active
//     tickets clustered (app.ClusterAgent).
package qaworker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/consume"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// Durable consumer names, one per source.
const (
	RunsDurable       = "tickets-qa-runs"
	PlatformDurable   = "tickets-qa-platform"
	ClusteringDurable = "tickets-qa-clustering"
)

// Worker is one QA worker replica.
type Worker struct {
	App *app.App
	JS  jetstream.JetStream
	Log *slog.Logger
	// Batch bounds the messages handled as one batch (default 256).
	Batch int
	// Parallel bounds the tickets written at once within a batch
	// (default 32: a write is two round trips to the stream, so the
	// worker waits more than it computes).
	Parallel int
	// AckWait is how long a batch a replica took may go unacknowledged
	// before another replica gets it (a killed replica's batch; default 1
	// minute).
	AckWait time.Duration
	// Metrics, when set, receives the worker's counters.
	Metrics prometheus.Registerer

	handled *prometheus.CounterVec
	invs    *invocationCache
}

// Run follows the three sources until ctx ends.
func (w *Worker) Run(ctx context.Context) error {
	if w.Batch <= 0 {
		w.Batch = 256
	}
	if w.Parallel <= 0 {
		w.Parallel = 32
	}
	if w.Log == nil {
		w.Log = slog.Default()
	}
	if w.AckWait <= 0 {
		w.AckWait = time.Minute
	}
	w.handled = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "voiceai_qa_worker_messages_total",
		Help: "Messages the QA worker handled, by source and outcome (ticketed, skipped, retried).",
	}, []string{"source", "outcome"})
	if w.Metrics != nil {
		if err := w.Metrics.Register(w.handled); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return err
			}
			w.handled = are.ExistingCollector.(*prometheus.CounterVec)
		}
	}
	w.invs = newInvocationCache(eventstore.New(w.JS, events.TestingStream))
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return w.follow(ctx, "runs", events.TestRunsStream, RunsDurable, []string{"testruns.evt.>"}, w.handleRuns)
	})
	g.Go(func() error {
		return w.follow(ctx, "platform", events.PlatformStream, PlatformDurable,
			[]string{"platform.evt.*.escalation_triggered", "platform.evt.*.conversation_ended"}, w.handlePlatform)
	})
	g.Go(func() error {
		return w.follow(ctx, "clustering", events.TicketsStream, ClusteringDurable, []string{events.TicketsAll}, w.handleTickets)
	})
	return g.Wait()
}

// follow feeds batches of the durable consumer to h until ctx ends (see
// package consume): a batch is acked once handled and redelivered with
// back-off when h fails.
func (w *Worker) follow(ctx context.Context, source, stream, durable string, filters []string, h consume.Handler) error {
	if _, err := eventstore.WaitForStream(ctx, w.JS, stream); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	return consume.Batches(ctx, w.JS, consume.Spec{
		Stream: stream, Durable: durable, FilterSubjects: filters, AckWait: w.AckWait, MaxBatch: w.Batch,
		OnError: func(batch []jetstream.Msg, err error) {
			w.Log.Warn("qa worker: batch failed; redelivering", "source", source, "messages", len(batch), "err", err)
			w.handled.WithLabelValues(source, "retried").Add(float64(len(batch)))
		},
	}, h)
}

// permanent reports an error no retry can fix: the request itself is
// refused (an unknown agent, an invalid id). The message is skipped.
func permanent(err error) bool {
	switch apperr.KindOf(err) {
	case apperr.Invalid, apperr.NotFound, apperr.Forbidden, apperr.TooLarge, apperr.Unsupported:
		return true
	}
	return false
}
