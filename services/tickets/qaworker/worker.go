// Package qaworker turns what goes wrong into triage tickets, and clusters
// them. It follows three sources through app.QAFeed, whose position every
// replica shares, so workers scale out and a killed one loses nothing: a
// batch is done only once its tickets are written, and every write is
// idempotent, so a batch delivered again changes nothing twice. It is a
// driving adapter without a transport of its own: the feed (adapters on
// the streams, memory in its tests) brings the messages, the tickets
// application does the writes.
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
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/tick"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// Worker is one QA worker replica.
type Worker struct {
	App  *app.App
	Feed app.QAFeed
	// Testing is the testing service's event log, where the invocations
	// runs belong to are.
	Testing eventlog.Store
	Log     *slog.Logger
	// Parallel bounds the tickets written at once within a batch
	// (default 128: a write is two round trips to the stream, which take
	// tens of milliseconds while the runners keep the platform busy, so
	// the worker waits far more than it computes).
	Parallel int
	// Metrics, when set, receives the worker's counters.
	Metrics prometheus.Registerer

	handled *prometheus.CounterVec
	invs    *invocationCache
}

// Run follows the three sources until ctx ends; it fails only to start
// (its metrics refused).
func (w *Worker) Run(ctx context.Context) error {
	if w.Parallel <= 0 {
		w.Parallel = 128
	}
	if w.Log == nil {
		w.Log = slog.Default()
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
	// Each source's outcomes are exported from the start, at 0: a
	// dashboard then shows none where there were none (a source may see
	// nothing for long: failed runs), not "no data".
	for source, outcomes := range map[app.QASource][]string{
		app.QARuns: {"ticketed", "skipped", "retried"}, app.QAPlatform: {"ticketed", "skipped", "retried"}, app.QATickets: {"clustered", "retried"},
	} {
		for _, outcome := range outcomes {
			w.handled.WithLabelValues(string(source), outcome)
		}
	}
	w.invs = newInvocationCache(w.Testing)
	var sources sync.WaitGroup
	for source, h := range map[app.QASource]handler{app.QARuns: w.handleRuns, app.QAPlatform: w.handlePlatform, app.QATickets: w.handleTickets} {
		sources.Go(func() { w.follow(ctx, source, w.counted(source, h)) })
	}
	sources.Wait()
	return nil
}

// restarting is the back-off of a source the feed stopped following.
var restarting = tick.Restarting

// follow follows one source until ctx ends. A feed that stops on an error
// (its stream out of reach as it starts, a leader being elected) is
// started again after a back-off, as a connection heals: one source
// failing neither stops the others nor itself for good, while the
// process goes on saying it is ready.
func (w *Worker) follow(ctx context.Context, source app.QASource, h handler) {
	restarting.Restart(ctx, func(ctx context.Context) error { return w.Feed.Follow(ctx, source, h) }, func(err error, again time.Duration) {
		w.Log.Error("qa worker: a source stopped; following it again", "source", source, "err", err, "after", again)
	})
}

// handler handles one batch of a source; an error has it delivered again.
type handler func(ctx context.Context, batch []app.QAMessage) error

// counted is h that logs and counts a batch it fails, which the feed
// delivers again (unless the worker is stopping).
func (w *Worker) counted(source app.QASource, h handler) handler {
	return func(ctx context.Context, batch []app.QAMessage) error {
		err := h(ctx, batch)
		if err != nil && ctx.Err() == nil {
			w.Log.Warn("qa worker: batch failed; redelivering", "source", source, "messages", len(batch), "err", err)
			w.handled.WithLabelValues(string(source), "retried").Add(float64(len(batch)))
		}
		return err
	}
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
