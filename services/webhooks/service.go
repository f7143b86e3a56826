// Package webhooks wires the webhooks service: the management and
// ingestion API (Start) and the dispatcher that delivers events
// (StartDispatcher), which run in separate binaries in production and in
// one process in the all-in-one stack.
package webhooks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/config"
	"github.com/voiceai-platform/voiceai/pkg/outbound"
	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/convseal/kvkeys"
	"github.com/voiceai-platform/voiceai/pkg/cursor"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/projection"
	"github.com/voiceai-platform/voiceai/pkg/runtime"
	"github.com/voiceai-platform/voiceai/pkg/seal"
	"github.com/voiceai-platform/voiceai/services/webhooks/adapters"
	"github.com/voiceai-platform/voiceai/services/webhooks/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/delivery"
	"github.com/voiceai-platform/voiceai/services/webhooks/dispatcher"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
	"github.com/voiceai-platform/voiceai/services/webhooks/ports"
)

// Name of the service on the bus.
const Name = "webhooks"

// SecretPurpose derives the key that seals signing secrets from the
// deployment secret (runtime.SubKey).
const SecretPurpose = "webhooks/signing-secrets"

// RelayTokenPurpose derives the key that signs relay delivery tokens.
const RelayTokenPurpose = "webhooks/relay-tokens"

// DefaultAttemptTimeout limits each delivery attempt.
const DefaultAttemptTimeout = 10 * time.Second

// Config is what both halves need.
type Config struct {
	// Secret is the deployment secret (VOICEAI_SECRET_KEY, or the data
	// directory's secret.key in the all-in-one stack).
	Secret string
	// AllowHosts may be private and reached over plain http
	// (VOICEAI_OUTBOUND_ALLOW_HOSTS, or its old name VOICEAI_WEBHOOK_ALLOW_HOSTS).
	AllowHosts []string
	// AttemptTimeout limits each delivery attempt (default 10s).
	AttemptTimeout time.Duration
	// Dispatcher tunes StartDispatcher.
	Dispatcher dispatcher.Options
	// AutoDisable is when the dispatcher disables a webhook whose
	// deliveries keep failing for good (nil: 20 in a row over an hour),
	// unless Dispatcher.AutoDisable says otherwise.
	AutoDisable *domain.AutoDisable
	// MaxWaitingPerWorkspace is dispatcher.Options' unless that sets it.
	MaxWaitingPerWorkspace int
	// MaxPerWorkspace bounds a workspace's webhooks (0: no bound).
	MaxPerWorkspace int
}

// AutoDisableEnv is the auto-disable rule as the environment gives it.
type AutoDisableEnv struct {
	// Failures in a row that disable a webhook (0: never).
	Failures int `env:"VOICEAI_WEBHOOK_AUTO_DISABLE_FAILURES" envDefault:"20"`
	// The least time from the first of them to the latest.
	Over time.Duration `env:"VOICEAI_WEBHOOK_AUTO_DISABLE_AFTER" envDefault:"1h"`
}

// Rule is the rule the environment gives.
func (e AutoDisableEnv) Rule() *domain.AutoDisable {
	return &domain.AutoDisable{Failures: e.Failures, Over: e.Over}
}

// Env is the environment both binaries read (config.Load).
type Env struct {
	SecretKey string `env:"VOICEAI_SECRET_KEY,required,notEmpty"`
	outbound.Env
	AttemptTimeout time.Duration `env:"VOICEAI_WEBHOOK_TIMEOUT" envDefault:"10s"`
	AutoDisable    AutoDisableEnv
	// MaxWaitingPerWorkspace bounds one workspace's deliveries waiting
	// (0: no bound); see dispatcher.Options.
	MaxWaitingPerWorkspace int `env:"VOICEAI_WEBHOOK_MAX_WAITING_PER_WORKSPACE" envDefault:"20000"`
	// PerWorkspace is how many deliveries of one workspace a dispatcher
	// makes at once while others wait (0: a quarter of its workers; -1:
	// no bound); see dispatcher.Options.
	PerWorkspace int `env:"VOICEAI_WEBHOOK_PER_WORKSPACE" envDefault:"0"`
	// MaxPerWorkspace bounds a workspace's webhooks (0: no bound).
	MaxPerWorkspace int `env:"VOICEAI_WEBHOOK_MAX_PER_WORKSPACE" envDefault:"100"`
}

// Validate checks the secret, the attempt time-out and the bounds.
func (e Env) Validate() error {
	if err := config.CheckSecret(e.SecretKey); err != nil {
		return err
	}
	if e.AttemptTimeout < time.Second || e.AttemptTimeout > time.Minute {
		return fmt.Errorf("VOICEAI_WEBHOOK_TIMEOUT %s: want 1s..1m", e.AttemptTimeout)
	}
	if e.AutoDisable.Failures < 0 || e.AutoDisable.Failures > domain.MaxAutoDisableFailures {
		return fmt.Errorf("VOICEAI_WEBHOOK_AUTO_DISABLE_FAILURES %d: want 0..%d", e.AutoDisable.Failures, domain.MaxAutoDisableFailures)
	}
	if e.MaxWaitingPerWorkspace < 0 {
		return fmt.Errorf("VOICEAI_WEBHOOK_MAX_WAITING_PER_WORKSPACE %d: want 0 (no bound) or more", e.MaxWaitingPerWorkspace)
	}
	if err := CheckPerWorkspace(e.PerWorkspace); err != nil {
		return err
	}
	if err := CheckMaxPerWorkspace(e.MaxPerWorkspace); err != nil {
		return err
	}
	if e.AutoDisable.Over < 0 {
		return fmt.Errorf("VOICEAI_WEBHOOK_AUTO_DISABLE_AFTER %s: want no negative time", e.AutoDisable.Over)
	}
	return nil
}

// Config is the configuration the environment gives.
func (e Env) Config() Config {
	return Config{Secret: e.SecretKey, AllowHosts: e.Hosts(), AttemptTimeout: e.AttemptTimeout, AutoDisable: e.AutoDisable.Rule(),
		MaxWaitingPerWorkspace: MaxWaitingOption(e.MaxWaitingPerWorkspace), Dispatcher: dispatcher.Options{PerWorkspace: e.PerWorkspace},
		MaxPerWorkspace: e.MaxPerWorkspace}
}

// CheckMaxPerWorkspace checks VOICEAI_WEBHOOK_MAX_PER_WORKSPACE.
func CheckMaxPerWorkspace(n int) error {
	if n < 0 {
		return fmt.Errorf("VOICEAI_WEBHOOK_MAX_PER_WORKSPACE %d: want 0 (no bound) or more", n)
	}
	return nil
}

// CheckPerWorkspace checks VOICEAI_WEBHOOK_PER_WORKSPACE.
func CheckPerWorkspace(n int) error {
	if n < -1 {
		return fmt.Errorf("VOICEAI_WEBHOOK_PER_WORKSPACE %d: want -1 (no bound), 0 (a quarter of the workers) or more", n)
	}
	return nil
}

// MaxWaitingOption is dispatcher.Options.MaxWaitingPerWorkspace for the
// environment's value, whose 0 is no bound.
func MaxWaitingOption(env int) int {
	if env == 0 {
		return -1
	}
	return env
}

func (c Config) sealerAndSender() (*seal.Sealer, *delivery.Sender, error) {
	if c.Secret == "" {
		return nil, nil, errors.New("webhooks: the deployment secret is empty")
	}
	sealer, err := seal.New(runtime.SubKey(c.Secret, SecretPurpose))
	if err != nil {
		return nil, nil, err
	}
	timeout := c.AttemptTimeout
	if timeout <= 0 {
		timeout = DefaultAttemptTimeout
	}
	s := delivery.NewSender(outbound.NewGuard(c.AllowHosts), timeout)
	if c.Dispatcher.TimeUnit > 0 {
		s.TimeUnit = c.Dispatcher.TimeUnit
	}
	return sealer, s, nil
}

// Service is a running management and ingestion service.
type Service = runtime.Service[*app.App]

// Start runs the management and ingestion API until ctx ends. It serves
// once the webhook registry and the delivery log have caught up with
// their streams.
func Start(ctx context.Context, d runtime.Deps, c Config) (*Service, error) {
	sealer, sender, err := c.sealerAndSender()
	if err != nil {
		return nil, err
	}
	if err := adapters.EnsureStreams(ctx, d.JS, d.StreamReplicas); err != nil {
		return nil, err
	}
	reg := adapters.NewRegistry(d.JS, d.Logger)
	if err := reg.Follow(ctx); err != nil {
		return nil, err
	}
	attempts := memory.NewAttemptLog()
	attempts.FollowDeletions(reg)
	if err := adapters.FollowAttemptLog(ctx, d.JS, attempts, d.Logger); err != nil {
		return nil, err
	}
	db := d.Database(Name)
	history, err := adapters.OpenAttemptPages(ctx, db)
	if err != nil {
		return nil, err
	}
	adapters.StoreAttempts(ctx, d.JS, history, d.Logger, d.WritesHeld)
	d.StartProjection(ctx, db.Collection("webhooks"), projection.Config{
		Stream: events.WebhooksStream, Durable: "webhooks-readmodel", FilterSubjects: []string{events.WebhooksAll},
	}, adapters.ProjectWebhook)
	publisher, err := adapters.NewAttemptPublisher(ctx, d.JS, d.Logger)
	if err != nil {
		return nil, err
	}
	a := app.New(eventstore.New(d.JS, events.WebhooksStream), app.Ports{
		Registry: reg, Attempts: adapters.StreamAttemptLog{AttemptLog: attempts, Publisher: publisher},
		History: history, Backlog: adapters.StreamBacklog{JS: d.JS},
		Queue: adapters.NewStreamQueue(d.JS, d.Logger), Sender: adapters.NewSender(sender, adapters.Relay{NC: d.NC}),
		Sealer: sealer, Relay: adapters.Relay{NC: d.NC},
	}, runtime.SubKey(c.Secret, RelayTokenPurpose), d.Logger, d.Clock())
	a.Cursors = cursor.NewCodec(runtime.SubKey(c.Secret, "webhooks/cursor"))
	a.MaxPerWorkspace = c.MaxPerWorkspace
	a.Stopping = ctx
	if a.TranscriptKeys, err = kvkeys.Open(ctx, d.JS, d.StreamReplicas, c.Secret); err != nil {
		return nil, err
	}
	return runtime.Serve(d, Name, a, &ports.Handlers{App: a})
}

// SharedRegistry is the registry a running API follows WEBHOOKS with,
// for a dispatcher in the same process (StartDispatcher); nil if the API
// runs on another kind, and the dispatcher then follows its own.
func SharedRegistry(s *Service) *adapters.Registry {
	reg, _ := s.App.Registry.(*adapters.Registry)
	return reg
}

// StartDispatcher runs a dispatcher replica until ctx ends or it is
// stopped. reg may be a registry already following WEBHOOKS in this
// process (the all-in-one stack shares the API's); nil starts its own.
// The dispatcher needs no store: only NATS.
func StartDispatcher(ctx context.Context, d runtime.Deps, c Config, reg *adapters.Registry) (*dispatcher.Dispatcher, error) {
	sealer, sender, err := c.sealerAndSender()
	if err != nil {
		return nil, err
	}
	if err := adapters.EnsureStreams(ctx, d.JS, d.StreamReplicas); err != nil {
		return nil, err
	}
	if reg == nil {
		reg = adapters.NewRegistry(d.JS, d.Logger)
		if err := reg.Follow(ctx); err != nil {
			return nil, err
		}
	}
	opts := c.Dispatcher
	if opts.AutoDisable == nil {
		opts.AutoDisable = c.AutoDisable
	}
	if opts.MaxWaitingPerWorkspace == 0 {
		opts.MaxWaitingPerWorkspace = c.MaxWaitingPerWorkspace
	}
	d.WatchConsumer(events.WebhookDeliveriesStream, dispatcher.DeliverDurable)
	d.WatchConsumer(events.PlatformStream, dispatcher.FanoutPlatformDurable)
	d.WatchConsumer(events.TicketsStream, dispatcher.FanoutTicketsDurable)
	return dispatcher.Start(ctx, dispatcher.Deps{
		JS: d.JS, Registry: reg, Sender: adapters.NewSender(sender, adapters.Relay{NC: d.NC}), Sealer: sealer,
		Repo: app.NewRepo(eventstore.New(d.JS, events.WebhooksStream), reg, d.Logger, d.Clock()), Log: d.Logger, Metrics: d.Metrics,
		Hold: d.WritesHeld,
	}, opts)
}
