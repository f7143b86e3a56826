// Package dispatcher fans platform and domain events out to the webhooks
// subscribed to them and delivers each (event, webhook) pair as a job of
// the WEBHOOK_DELIVERIES work queue: signed POSTs, retries scheduled by
// JetStream (NakWithDelay), every attempt recorded. Replicas share the
// durable consumers, so they share the work; a replica killed mid-delivery
// leaves its jobs unacknowledged and JetStream hands them to another after
// AckWait.
package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/aggregate"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/seal"
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

// Options tune a dispatcher.
type Options struct {
	// Workers is how many deliveries run at once (default 64).
	Workers int
	// AckWait is how long a job may be held before JetStream gives it to
	// another replica (default: the attempt time-out plus 20s).
	AckWait time.Duration
	// TimeUnit is the length of one retry_config second (default 1s).
	// Tests shorten it; production never sets it.
	TimeUnit time.Duration
	// MaxAckPending bounds jobs held or waiting for a retry (default
	// 100000).
	MaxAckPending int
	// NoTickets leaves the TICKETS and TESTING domain events out.
	NoTickets bool
	// AutoDisable is when a webhook whose deliveries keep failing for
	// good is disabled (nil: domain.DefaultAutoDisable).
	AutoDisable *domain.AutoDisable
}

// Deps are what a dispatcher runs on.
type Deps struct {
	JS       jetstream.JetStream
	Registry *adapters.Registry
	Sender   adapters.Sender
	Sealer   *seal.Sealer
	Repo     *aggregate.Repo[*webhooksv1.Webhook]
	Log      *slog.Logger
	Metrics  prometheus.Registerer
}

// Dispatcher is a running dispatcher replica.
type Dispatcher struct {
	Deps
	opts    Options
	ctx     context.Context
	cancel  context.CancelFunc
	mu      sync.Mutex
	stops   []func()
	stopped bool
	slots   chan struct{}
	wg      sync.WaitGroup
	metrics *metrics
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
	if o.TimeUnit <= 0 {
		o.TimeUnit = time.Second
	}
	if o.MaxAckPending <= 0 {
		o.MaxAckPending = 100_000
	}
	if o.AutoDisable == nil {
		rule := domain.DefaultAutoDisable()
		o.AutoDisable = &rule
	}
	if o.AckWait <= d.Sender.HTTP.Timeout() {
		return nil, fmt.Errorf("dispatcher: AckWait %s must exceed the attempt time-out %s", o.AckWait, d.Sender.HTTP.Timeout())
	}
	dctx, cancel := context.WithCancel(ctx)
	ds := &Dispatcher{Deps: d, opts: o, ctx: dctx, cancel: cancel, slots: make(chan struct{}, o.Workers), metrics: newMetrics(d.Metrics)}
	if err := ds.startDelivery(); err != nil {
		ds.Stop()
		return nil, err
	}
	if err := ds.startFanout(); err != nil {
		ds.Stop()
		return nil, err
	}
	if err := ds.startAutoDisable(); err != nil {
		ds.Stop()
		return nil, err
	}
	return ds, nil
}

// startAutoDisable follows the attempt records of every replica and
// disables a webhook whose deliveries keep failing for good
// (app.AutoDisabler); every replica counts the same records, the first to
// see the rule trip writes the event.
func (d *Dispatcher) startAutoDisable() error {
	if d.opts.AutoDisable.Failures == 0 {
		return nil
	}
	ad := &app.AutoDisabler{Repo: d.Repo, Registry: d.Registry, Runs: memory.NewRunLog(), Rule: *d.opts.AutoDisable}
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

func (d *Dispatcher) onStop(f func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stops = append(d.stops, f)
}

// Stop stops taking work and waits for the deliveries in flight (each
// bounded by the attempt time-out) to finish and be acknowledged.
func (d *Dispatcher) Stop() {
	d.mu.Lock()
	stops := d.stops
	d.stops = nil
	d.stopped = true
	d.mu.Unlock()
	for _, s := range stops {
		s()
	}
	d.wg.Wait()
	d.cancel()
}

// track counts one delivery as work Stop waits for (the caller calls
// wg.Done when it ends); false once the dispatcher stopped.
func (d *Dispatcher) track() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return false
	}
	d.wg.Add(1)
	return true
}

// consume runs h on the durable consumer of stream shared by every
// replica: explicit acks, redelivered after AckWait, never given up on
// (a job's attempts are bounded by its webhook's retry_config instead).
func (d *Dispatcher) consume(stream, durable, filter string, maxAckPending, batch int, h jetstream.MessageHandler) error {
	cfg := jetstream.ConsumerConfig{
		Durable:       durable,
		FilterSubject: filter,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       d.opts.AckWait,
		MaxDeliver:    -1,
		MaxAckPending: maxAckPending,
	}
	cons, err := eventstore.EnsureConsumer(d.ctx, d.JS, stream, cfg)
	if err != nil {
		return fmt.Errorf("consumer %s: %w", cfg.Durable, err)
	}
	cc, err := cons.Consume(h, jetstream.PullMaxMessages(batch), jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		if !errors.Is(err, jetstream.ErrNoHeartbeat) && d.ctx.Err() == nil {
			d.Log.Debug("consume", "consumer", cfg.Durable, "err", err)
		}
	}))
	if err != nil {
		return fmt.Errorf("consume %s: %w", cfg.Durable, err)
	}
	d.onStop(cc.Stop)
	return nil
}
