// Package dispatcher is the driving adapter of the webhook dispatcher: it
// consumes platform and domain events (pkg/consume, in batches) and
// delivery jobs (per message), hands them to their use cases in app
// (app.Dispatch: fan-out, delivery) and settles the messages as the use
// case says. Retries are scheduled by the stream (a message given back
// with a delay). Replicas
// share the durable consumers, so they share the work; a replica killed
// mid-delivery leaves its jobs unacknowledged and they go to another
// after AckWait.
package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/aggregate"
	"github.com/voiceai-platform/voiceai/pkg/consume"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/seal"
	"github.com/voiceai-platform/voiceai/pkg/tick"
	"github.com/voiceai-platform/voiceai/pkg/tracing"
	"github.com/voiceai-platform/voiceai/services/webhooks/adapters"
	"github.com/voiceai-platform/voiceai/services/webhooks/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// Durable consumer names, shared by every replica.
const (
	FanoutPlatformDurable = "webhooks-fanout-platform"
	FanoutTicketsDurable  = "webhooks-fanout-tickets"
	FanoutTestingDurable  = "webhooks-fanout-testing"
	DeliverDurable        = "webhooks-deliver"
)

// Fan-out consumers fan out up to fanoutBatch events at once (what has
// arrived: the jobs of all of them are stored with one wait) and hold at
// most fanoutMaxAckPending unacknowledged.
const (
	fanoutBatch         = 256
	fanoutMaxAckPending = 1000
)

// Options tune a dispatcher.
type Options struct {
	// Workers is how many deliveries run at once (default 64).
	Workers int
	// AckWait is how long a job may be held before it goes to another
	// replica (default: the attempt time-out plus 20s).
	AckWait time.Duration
	// TimeUnit is the length of one retry_config second (default 1s).
	// Tests shorten it; production never sets it.
	TimeUnit time.Duration
	// MaxAckPending bounds jobs held or waiting for a retry (default
	// 100000).
	MaxAckPending int
	// MaxWaitingPerWorkspace bounds one workspace's deliveries waiting,
	// queued and scheduled retries together: past it a delivery that
	// would be retried fails for good (app.WorkspaceShare), so that no
	// workspace fills the room MaxAckPending keeps for all (0: a fifth of
	// MaxAckPending; negative: no bound).
	MaxWaitingPerWorkspace int
	// PerWorkspace is how many deliveries of one workspace may be under
	// way at once on a replica whatever the others do, and Workers less
	// that at most (app.Turns): past it, while its receiver is slow and
	// other workspaces have deliveries waiting, its jobs wait for their
	// turn, no attempt spent (0: a quarter of Workers, at least 1;
	// negative: no bound).
	PerWorkspace int
	// NoTickets leaves the TICKETS and TESTING domain events out.
	NoTickets bool
	// AutoDisable is when a webhook whose deliveries keep failing for
	// good is disabled (nil: domain.DefaultAutoDisable).
	AutoDisable *domain.AutoDisable
}

// Deps are what a dispatcher runs on.
type Deps struct {
	JS       jetstream.JetStream // the streams it consumes and publishes on
	Registry *adapters.Registry
	Sender   adapters.Sender
	Sealer   *seal.Sealer
	Repo     *aggregate.Repo[*webhooksv1.Webhook]
	Log      *slog.Logger
	Metrics  prometheus.Registerer
	// Hold, when set, holds the fan-out (it writes delivery jobs) and the
	// deliveries (each records its attempt) while it says why not
	// (consume.Spec.Hold): queued jobs wait, and are attempted once it
	// lets go. Attempts under way finish.
	Hold func() error
}

// Dispatcher is a running dispatcher replica.
type Dispatcher struct {
	Deps
	opts     Options
	use      *app.Dispatch
	attempts *adapters.AttemptPublisher
	ctx      context.Context // ends after the work: the followers
	cancel   context.CancelFunc
	stop     context.CancelFunc // ends the work: the consumers
	work     sync.WaitGroup
	metrics  *metrics
}

// Start runs a dispatcher until Stop or ctx ends. The registry must be
// following the WEBHOOKS stream already.
func Start(ctx context.Context, d Deps, o Options) (*Dispatcher, error) {
	if o.Workers <= 0 {
		o.Workers = 64
	}
	if o.AckWait <= 0 {
		o.AckWait = d.Sender.HTTP.Timeout() + 20*time.Second
	}
	if o.MaxAckPending <= 0 {
		o.MaxAckPending = 100_000
	}
	if o.PerWorkspace == 0 {
		o.PerWorkspace = max(o.Workers/4, 1)
	}
	if o.MaxWaitingPerWorkspace == 0 {
		o.MaxWaitingPerWorkspace = o.MaxAckPending / 5
	}
	if o.AutoDisable == nil {
		rule := domain.DefaultAutoDisable()
		o.AutoDisable = &rule
	}
	if o.AckWait <= d.Sender.HTTP.Timeout() {
		return nil, fmt.Errorf("dispatcher: AckWait %s must exceed the attempt time-out %s", o.AckWait, d.Sender.HTTP.Timeout())
	}
	dctx, cancel := context.WithCancel(ctx)
	attempts, err := adapters.NewAttemptPublisher(dctx, d.JS, d.Log)
	if err != nil {
		cancel()
		return nil, err
	}
	work, stop := context.WithCancel(dctx)
	ds := &Dispatcher{Deps: d, opts: o, attempts: attempts, ctx: dctx, cancel: cancel, stop: stop, metrics: newMetrics(d.Metrics),
		use: &app.Dispatch{
			Subscriptions: d.Registry, Queue: adapters.NewStreamQueue(d.JS, d.Log), Attempts: attempts,
			Sender: d.Sender, Sealer: d.Sealer, Webhooks: d.Repo, Log: d.Log, Now: d.Repo.Now, TimeUnit: o.TimeUnit,
			Share: &app.WorkspaceShare{Backlog: adapters.StreamBacklog{JS: d.JS}, Most: o.MaxWaitingPerWorkspace},
			Turns: &app.Turns{Backlog: adapters.StreamBacklog{JS: d.JS}, Share: max(o.PerWorkspace, 0), Most: o.Workers - o.PerWorkspace},
		}}
	// Deliveries: a pool of workers, each job settled as its attempt says
	// (MaxDeliver unlimited: a job's attempts are bounded by its
	// webhook's retry_config instead).
	deliver := consume.Spec{Stream: events.WebhookDeliveriesStream, Durable: DeliverDurable, FilterSubjects: []string{events.WebhookDeliveriesAll},
		AckWait: o.AckWait, MaxAckPending: o.MaxAckPending, Workers: o.Workers, Log: d.Log, Hold: d.Hold}
	platform := ds.fanoutSpec(events.PlatformStream, FanoutPlatformDurable, events.PlatformAll)
	for _, start := range []func() (func(), error){
		func() (func(), error) { return consume.StartMessages(work, d.JS, deliver, ds.deliver) },
		func() (func(), error) { return consume.StartBatches(work, d.JS, platform, ds.fanout(ds.platformEvent)) },
	} {
		wait, err := start()
		ds.work.Go(wait)
		if err != nil {
			ds.Stop()
			return nil, err
		}
	}
	if !o.NoTickets {
		// TICKETS and TESTING belong to other services, which may start
		// later.
		ds.consumeWhenThere(work, ds.fanoutSpec(events.TicketsStream, FanoutTicketsDurable, events.TicketsAll), ds.fanout(ticketEvent))
		ds.consumeWhenThere(work, ds.fanoutSpec(events.TestingStream, FanoutTestingDurable, events.TestingInvocationsAll), ds.fanout(invocationEvent))
	}
	if err := ds.startAutoDisable(); err != nil {
		ds.Stop()
		return nil, err
	}
	return ds, nil
}

// fanoutSpec is a fan-out's consumer: batches of events, in order. A
// batch that fails is logged by the use case, which knows why.
func (d *Dispatcher) fanoutSpec(stream, durable, filter string) consume.Spec {
	return consume.Spec{Stream: stream, Durable: durable, FilterSubjects: []string{filter}, AckWait: d.opts.AckWait,
		MaxBatch: fanoutBatch, MaxAckPending: fanoutMaxAckPending, Log: d.Log, Hold: d.Hold}
}

// consumeWhenThere consumes s once its stream exists, and again should it
// stop.
func (d *Dispatcher) consumeWhenThere(ctx context.Context, s consume.Spec, h consume.Handler) {
	d.work.Go(func() {
		tick.Restarting.Restart(ctx, func(ctx context.Context) error {
			if _, err := eventstore.WaitForStream(ctx, d.JS, s.Stream); err != nil {
				return err
			}
			return consume.Batches(ctx, d.JS, s, h)
		}, func(err error, again time.Duration) {
			d.Log.Error("domain events do not reach webhooks; consuming them again", "stream", s.Stream, "err", err, "after", again)
		})
	})
}

// startAutoDisable follows the attempt records of every replica and
// disables a webhook whose deliveries keep failing for good
// (app.AutoDisabler); every replica counts the same records, the first to
// see the rule trip writes the event.
func (d *Dispatcher) startAutoDisable() error {
	if d.opts.AutoDisable.Failures == 0 {
		return nil
	}
	runs := memory.NewRunLog()
	runs.FollowDeletions(d.Registry)
	ad := &app.AutoDisabler{Repo: d.Repo, Registry: d.Registry, Runs: runs, Rule: *d.opts.AutoDisable}
	return adapters.FollowAttempts(d.ctx, d.JS, d.Log, func(att *webhooksv1.DeliveryAttempt) {
		disabled, err := ad.Observe(d.ctx, att)
		switch {
		case err != nil && d.ctx.Err() == nil:
			d.Log.Warn("could not disable a webhook whose deliveries keep failing", "webhook_id", att.GetWebhookId(), "err", err)
		case disabled:
			d.Log.Info("webhook disabled automatically: its deliveries kept failing", "webhook_id", att.GetWebhookId(),
				"workspace_id", att.GetWorkspaceId(), "failures", d.opts.AutoDisable.Failures, "over", d.opts.AutoDisable.Over)
		}
	})
}

// Stop stops taking work and waits for the deliveries in flight (each
// bounded by the attempt time-out) to finish and be settled.
func (d *Dispatcher) Stop() {
	d.stop()
	d.work.Wait()
	// The attempts' records a stream has not taken yet are published
	// again for a while before they would be lost with the process.
	ctx, cancel := context.WithTimeout(context.Background(), flushWithin)
	if err := d.attempts.Flush(ctx); err != nil {
		d.Log.Warn("attempt records not taken before the stop; lost", "err", err)
	}
	cancel()
	d.cancel()
}

// flushWithin bounds a stopping dispatcher's wait for its attempt
// records.
const flushWithin = 5 * time.Second

// deliver makes one attempt of a job (app.Dispatch.Deliver) and settles
// it as the attempt says.
func (d *Dispatcher) deliver(ctx context.Context, m consume.Msg) consume.Outcome {
	// An attempt under way finishes even when the replica is stopping;
	// the sender bounds it by the attempt time-out. What is logged about
	// the job names the event's trace.
	ctx = traceOf(context.WithoutCancel(ctx), m)
	var job webhooksv1.DeliveryJob
	if err := proto.Unmarshal(m.Data, &job); err != nil {
		d.Log.ErrorContext(ctx, "delivery job undecodable; dropped", "seq", m.Seq, "err", err)
		return consume.GiveUp()
	}
	// A job put back to wait for its workspace's turn says in its headers
	// what became of it before; the copy is named by its place in the
	// stream.
	taken := app.Taken{Queued: adapters.QueuedOf(&job, m.Header), Delivered: int(m.Delivered),
		Copy: app.JobID(&job) + "@" + strconv.FormatUint(m.Seq, 10)}
	h := d.use.DeliverTaken(ctx, taken)
	if h.Result != "" {
		d.metrics.attempts.WithLabelValues(h.Result).Inc()
	}
	if h.Took > 0 {
		d.metrics.duration.Observe(h.Took.Seconds())
	}
	return settle(h)
}

// errFanoutNotStored has events of a fan-out's batch delivered again:
// their jobs were not stored (the use case logged why).
var errFanoutNotStored = errors.New("delivery jobs not stored")

// fanout is a fan-out consumer's batch handler: each message is read as
// the event it fans out (of), and the events of the batch are fanned out
// together (app.Dispatch.FanoutBatch); only those whose jobs could not be
// stored are delivered again.
func (d *Dispatcher) fanout(of func(ctx context.Context, r eventstore.Record) (app.FanoutEvent, bool)) consume.Handler {
	return func(ctx context.Context, batch []jetstream.Msg) error {
		evs := make([]app.FanoutEvent, 0, len(batch))
		at := make([]int, 0, len(batch)) // each event's message in batch
		for i, m := range batch {
			r, err := eventstore.RecordFromMsg(m)
			if err != nil {
				continue // not a stream message: nothing to fan out
			}
			if e, ok := of(ctx, r); ok {
				evs, at = append(evs, e), append(at, i)
			}
		}
		retry := d.use.FanoutBatch(ctx, evs)
		if len(retry) == 0 {
			return nil
		}
		for i, e := range retry {
			retry[i] = at[e]
		}
		return consume.Failed(errFanoutNotStored, retry...)
	}
}

// platformEvent reads a spec 6.1 envelope stored at
// platform.evt.<ws>.<event>.
func (d *Dispatcher) platformEvent(ctx context.Context, r eventstore.Record) (app.FanoutEvent, bool) {
	ws, name, ok := events.ParsePlatformSubject(r.Subject)
	if !ok {
		return app.FanoutEvent{}, false // not an event anyone can subscribe to
	}
	return d.use.PlatformFanout(ctx, name, r.Data, stored(r, ws, events.PlatformStream))
}

// ticketEvent reads a TICKETS event, decoded when a webhook wants it
// (app.TicketFanoutOf). A message of a type this build cannot decode (a
// newer one) is passed over, as one of no public event.
func ticketEvent(_ context.Context, r eventstore.Record) (app.FanoutEvent, bool) {
	return app.TicketFanoutOf(r.Type, stored(r, r.Workspace, events.TicketsStream), func() (proto.Message, error) { return esproto.Decode(r) })
}

// invocationEvent reads a TESTING invocation's outcome.
func invocationEvent(_ context.Context, r eventstore.Record) (app.FanoutEvent, bool) {
	if !app.IsInvocationEvent(r.Type) {
		return app.FanoutEvent{}, false
	}
	msg, err := esproto.Decode(r)
	if err != nil {
		return app.FanoutEvent{}, false
	}
	return app.InvocationFanout(r.Type, msg, stored(r, r.Workspace, events.TestingStream))
}

// settle is the consume outcome of a use case's verdict.
func settle(h app.Handled) consume.Outcome {
	switch h.Next {
	case app.Done:
		return consume.Done()
	case app.RetryLater:
		return consume.Retry(h.After)
	default:
		return consume.GiveUp()
	}
}

// stored is where r was stored, with its id, stable across redeliveries
// (its Voiceai-Event-Id, else its Nats-Msg-Id, else derived from its
// position in stream), and its trace.
func stored(r eventstore.Record, workspaceID, stream string) app.Stored {
	id := r.Header.Get(events.HeaderEventID)
	if id == "" {
		id = r.Header.Get(events.HeaderMsgID)
	}
	if id == "" {
		id = "evt_" + esproto.StableID(stream, strconv.FormatUint(r.Seq, 10))
	}
	return app.Stored{WorkspaceID: workspaceID, EventID: id, At: r.Time, Traceparent: r.Header.Get(events.HeaderTraceparent)}
}

// traceOf is ctx carrying the trace m's traceparent names: what is logged
// about m names it, and the jobs it queues continue it.
func traceOf(ctx context.Context, m consume.Msg) context.Context {
	tp := m.Header.Get(events.HeaderTraceparent)
	return tracing.WithRequestTrace(tracing.Extract(ctx, tp), tp)
}
