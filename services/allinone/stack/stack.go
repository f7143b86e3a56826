// Package stack runs the whole platform in one process on embedded
// infrastructure: a NATS JetStream server and FerretDB (SQLite) under one
// data directory that survives restarts. It serves `make run` and the
// end-to-end tests; production runs each service as its own binary.
package stack

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/voiceai-platform/voiceai/pkg/config"
	"github.com/voiceai-platform/voiceai/pkg/dirlock"
	"github.com/voiceai-platform/voiceai/pkg/diskguard"
	"github.com/voiceai-platform/voiceai/pkg/embedded"
	"github.com/voiceai-platform/voiceai/pkg/obs"
	"github.com/voiceai-platform/voiceai/pkg/outbound"
	"github.com/voiceai-platform/voiceai/pkg/projection"
	"github.com/voiceai-platform/voiceai/pkg/runtime"
	"github.com/voiceai-platform/voiceai/services/agents"
	"github.com/voiceai-platform/voiceai/services/gateway"
	"github.com/voiceai-platform/voiceai/services/identity"
	testingsvc "github.com/voiceai-platform/voiceai/services/testing"
	"github.com/voiceai-platform/voiceai/services/tickets"
	"github.com/voiceai-platform/voiceai/services/webhooks"
	webhookdispatcher "github.com/voiceai-platform/voiceai/services/webhooks/dispatcher"
)

// Config of the all-in-one stack, from VOICEAI_* variables.
type Config struct {
	gateway.Config
	DataDir           string `env:"VOICEAI_DATA_DIR" envDefault:"./data"`
	NATSPort          int    `env:"VOICEAI_EMBEDDED_NATS_PORT" envDefault:"4222"`
	LogLevel          string `env:"VOICEAI_LOG_LEVEL" envDefault:"info"`
	MetricsAddr       string `env:"VOICEAI_METRICS_ADDR" envDefault:"127.0.0.1:9464"`
	BootstrapAdminKey string `env:"VOICEAI_BOOTSTRAP_ADMIN_KEY"`
	SecretKey         string `env:"VOICEAI_SECRET_KEY"`
	// Outbound is the operator's allow-list: hosts webhooks and agents'
	// own model endpoints may reach although private, and over plain http
	// (comma-separated host names or IPs, e.g. 127.0.0.1,localhost).
	Outbound outbound.Env
	// Testing are the testing service's workspace quotas and run
	// retention.
	Testing testingsvc.Limits
	// Runner configures the in-process test runner workers.
	Runner testingsvc.RunnerConfig
	// Runners is how many runner workers run in process (0: none, for a
	// deployment whose testing-runner processes are separate).
	Runners int `env:"VOICEAI_EMBEDDED_RUNNERS" envDefault:"1"`
	// QAWorkers is how many QA workers (failures and escalations become
	// tickets, tickets are clustered) run in process (0: none, for a
	// deployment whose tickets-qa-worker processes are separate).
	QAWorkers int `env:"VOICEAI_EMBEDDED_QA_WORKERS" envDefault:"1"`
	QAWorker  tickets.QAWorkerConfig
	// Snapshots tune the conversation index's snapshots.
	Snapshots tickets.SnapshotConfig
	// ReadIndex is what listings read (config.ReadIndexMemory by default:
	// the embedded store scans every document of a filtered query).
	ReadIndex string `env:"VOICEAI_READ_INDEX" envDefault:"memory"`
	// WebhookTimeUnit scales webhook retry delays (tests only; 0 = 1s).
	WebhookTimeUnit time.Duration `env:"-"`
	// OverNATS has the gateway forward to the services beside it over
	// NATS, as a split deployment's does, not in process (tests of what
	// only that path does: hedges).
	OverNATS bool `env:"-"`
	// WebhookAutoDisable is when a webhook whose deliveries keep failing
	// is disabled (VOICEAI_WEBHOOK_AUTO_DISABLE_FAILURES, _AFTER).
	WebhookAutoDisable webhooks.AutoDisableEnv
	// WebhookMaxWaitingPerWorkspace bounds one workspace's webhook
	// deliveries waiting (0: no bound): past it, one that would be
	// retried fails for good, recoverable.
	WebhookMaxWaitingPerWorkspace int `env:"VOICEAI_WEBHOOK_MAX_WAITING_PER_WORKSPACE" envDefault:"20000"`
	// WebhookPerWorkspace is how many deliveries of one workspace the
	// dispatcher makes at once while others wait (0: a quarter of its
	// workers; -1: no bound).
	WebhookPerWorkspace int `env:"VOICEAI_WEBHOOK_PER_WORKSPACE" envDefault:"0"`
	// Identity bounds a workspace's live API keys, service accounts and
	// members (VOICEAI_MAX_API_KEYS_PER_WORKSPACE, …).
	Identity identity.Config
	// WebhookMaxPerWorkspace bounds a workspace's webhooks (0: no bound).
	WebhookMaxPerWorkspace int `env:"VOICEAI_WEBHOOK_MAX_PER_WORKSPACE" envDefault:"100"`
	// DiskFreeMin is the free space of the data directory's file system
	// under which the gateway refuses writes (503 storage_full) until
	// space is freed; 0 never does.
	DiskFreeMin uint64 `env:"VOICEAI_DISK_FREE_MIN_BYTES" envDefault:"268435456"`
	// DiskFree reads that free space (nil: the file system's); tests set
	// it.
	DiskFree func() (uint64, error) `env:"-"`
	// Store starts the document store in a directory: in-process in the
	// binary (docstore.Run), a process of its own in the tests (so that no
	// race-enabled test binary links FerretDB).
	Store StoreFunc `env:"-"`
}

// StoreFunc starts the store with its files in dir and returns its URI,
// how to stop it, and why it stopped by itself (nil while it serves).
type StoreFunc func(dir string) (uri string, stop func(), stopped func() error, err error)

// Validate checks the configuration.
func (c Config) Validate() error {
	if c.DataDir == "" {
		return errors.New("VOICEAI_DATA_DIR must not be empty")
	}
	if err := config.CheckSecret(c.SecretKey); err != nil {
		return err
	}
	if err := c.Outbound.Validate(); err != nil {
		return err
	}
	if c.WebhookMaxWaitingPerWorkspace < 0 {
		return fmt.Errorf("VOICEAI_WEBHOOK_MAX_WAITING_PER_WORKSPACE %d: want 0 (no bound) or more", c.WebhookMaxWaitingPerWorkspace)
	}
	if err := webhooks.CheckPerWorkspace(c.WebhookPerWorkspace); err != nil {
		return err
	}
	if err := webhooks.CheckMaxPerWorkspace(c.WebhookMaxPerWorkspace); err != nil {
		return err
	}
	if err := c.Identity.Validate(); err != nil {
		return err
	}
	if c.NATSPort < -1 || c.NATSPort > 65535 {
		return fmt.Errorf("VOICEAI_EMBEDDED_NATS_PORT %d: want a port, or -1 for a random one", c.NATSPort)
	}
	if err := config.CheckListenAddr("VOICEAI_METRICS_ADDR", c.MetricsAddr, true); err != nil {
		return err
	}
	if c.ReadIndex != config.ReadIndexMemory && c.ReadIndex != config.ReadIndexStore {
		return fmt.Errorf("VOICEAI_READ_INDEX %q: want memory or store", c.ReadIndex)
	}
	if c.Runners < 0 || c.Runners > 64 {
		return fmt.Errorf("VOICEAI_EMBEDDED_RUNNERS %d: want 0..64", c.Runners)
	}
	if c.QAWorkers < 0 || c.QAWorkers > 64 {
		return fmt.Errorf("VOICEAI_EMBEDDED_QA_WORKERS %d: want 0..64", c.QAWorkers)
	}
	if c.QAWorkers > 0 {
		if err := c.QAWorker.Validate(); err != nil {
			return err
		}
	}
	if c.Runners > 0 {
		if err := c.Runner.Validate(); err != nil {
			return err
		}
	}
	if err := c.Testing.Validate(); err != nil {
		return err
	}
	return c.Config.Validate()
}

// Stack is a running platform.
type Stack struct {
	Addr     string // the gateway's listening address
	NATSURL  string
	MongoURI string
	// AdminKey is the bootstrap secret when this start generated one.
	AdminKey string
	KeyFile  string

	gateway *gateway.Gateway
	agents  http.Handler
	probes  obs.Probes
	link    *runtime.Link
	cancel  context.CancelFunc
	done    chan struct{}
	err     error // why the stack stopped; valid once done is closed
}

// Probes are the stack's liveness and readiness checks.
func (s *Stack) Probes() obs.Probes { return s.probes }

// Gateway is the running gateway (for benchmarks).
func (s *Stack) Gateway() *gateway.Gateway { return s.gateway }

// AgentsHandler is the agents service's HTTP handler, callable in-process.
func (s *Stack) AgentsHandler() http.Handler { return s.agents }

// Conn is the platform's own NATS connection, in process, which the
// gateway forwards on and the services answer on (for benchmarks).
func (s *Stack) Conn() *nats.Conn { return s.link.NC }

// TestConfig is a stack on random ports under dir with store, for tests
// and benchmarks.
func TestConfig(dir string, store StoreFunc) Config {
	return Config{Store: store,
		Config: gateway.Config{
			HTTPAddr: "127.0.0.1:0", RateLimitPerMinute: 100, RateLimitPerHour: 1000,
			MaxBodyBytes: 1 << 20, UpstreamTimeout: 30 * time.Second,
		},
		DataDir: dir, NATSPort: -1, LogLevel: "info", ReadIndex: config.ReadIndexMemory,
		Runners: 1, QAWorkers: 1, WebhookMaxWaitingPerWorkspace: 20_000, WebhookMaxPerWorkspace: 100,
		Identity:  identity.DefaultConfig,
		Testing:   testingsvc.Limits{MaxActiveInvocations: 20, MaxQueuedRuns: 250_000, RunRetention: 2160 * time.Hour, MaxLoadCallers: 500},
		QAWorker:  tickets.QAWorkerConfig{AckWait: 10 * time.Second, Batch: 256, Clustering: "rules", LLMTimeout: time.Minute},
		Snapshots: tickets.SnapshotConfig{Every: 20_000},
		Runner: testingsvc.RunnerConfig{Provider: "offline", Concurrency: 8, RunTimeout: 2 * time.Minute,
			AckWait: 30 * time.Second, LLMTimeout: time.Minute, JudgeVotes: 3, ModelCacheTTL: time.Hour,
			EndpointConcurrency: 4, EndpointTimeout: 30 * time.Second},
	}
}

// Wait blocks until the stack has stopped; runtime.ErrConnectionLost
// means it stopped because its NATS connection was lost for good, and
// may be started again.
func (s *Stack) Wait() error {
	<-s.done
	return s.err
}

// Close stops the stack and waits for it; calling it again is harmless.
func (s *Stack) Close() error {
	s.cancel()
	return s.Wait()
}

// NATSURLFile records the embedded NATS address for operator commands.
const NATSURLFile = "nats.url"

// MongoURIFile records the embedded store's address, so that separate
// workers (tickets-qa-worker) can join the all-in-one process.
const MongoURIFile = "mongo.uri"

// Start brings the platform up and returns once the gateway accepts
// requests with every API key loaded.
func Start(parent context.Context, c Config, log *slog.Logger, reg *prometheus.Registry) (*Stack, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	ctx, cancel := context.WithCancel(parent)
	cleanup := []func(){}
	fail := func(err error) (*Stack, error) {
		cancel()
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
		return nil, err
	}
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return fail(err)
	}
	// One platform a data directory: a second one would open the same
	// streams and store with a NATS and a store of its own, and lose
	// acknowledged writes.
	release, err := dirlock.Acquire(c.DataDir)
	if err != nil {
		return fail(err)
	}
	cleanup = append(cleanup, release) // last: after everything that writes there stopped
	// Writes stop before the disk under the streams and the store fills:
	// a stream that once failed a write for want of space fails every
	// later one until the server restarts.
	disk := diskguard.Start(ctx, diskguard.Options{Dir: c.DataDir, Floor: c.DiskFreeMin, Free: c.DiskFree, Log: log, Registry: reg})
	// A write JetStream failed (the disk filled before the guard held
	// writes, an I/O error) fails every later write of its stream until
	// the server restarts: the process is then not live.
	var writeFailed atomic.Pointer[string]
	noteWriteFailed := func(msg string) {
		if writeFailed.CompareAndSwap(nil, &msg) {
			log.Error("JetStream refuses a stream's writes until the platform restarts: free space, then restart it", "cause", msg)
		}
	}
	secret := c.SecretKey
	if secret == "" {
		var err error
		if secret, err = runtime.LoadOrCreateSecret(filepath.Join(c.DataDir, "secret.key")); err != nil {
			return fail(err)
		}
	}
	// The embedded NATS takes only clients that know a password derived
	// from the secret: a request on its subjects is trusted as the gateway
	// made it (workspace and permissions in its headers), so another
	// local user must not be able to send one.
	natsOpts := embedded.NATSOptions{StoreDir: filepath.Join(c.DataDir, "nats"), Port: c.NATSPort, MaxPayload: 8 << 20,
		Logger: log, WriteFailed: noteWriteFailed,
		User: "voiceai", Password: hex.EncodeToString(runtime.SubKey(secret, "embedded-nats"))[:32]}
	ns, err := embedded.StartNATS(natsOpts)
	if err != nil {
		return fail(err)
	}
	cleanup = append(cleanup, func() { ns.Shutdown(); ns.WaitForShutdown() })
	natsURL := natsOpts.ClientURL(ns)
	_ = os.WriteFile(filepath.Join(c.DataDir, NATSURLFile), []byte(natsURL+"\n"), 0o600)

	if c.Store == nil {
		return fail(errors.New("stack: no store (Config.Store)"))
	}
	storeURI, stopStore, storeStopped, err := c.Store(filepath.Join(c.DataDir, "mongo"))
	if err != nil {
		return fail(err)
	}
	_ = os.WriteFile(filepath.Join(c.DataDir, MongoURIFile), []byte(storeURI+"\n"), 0o600)
	// This process is the only writer of its embedded store.
	projection.AssumeSingleWriter()
	cleanup = append(cleanup, stopStore)

	// In process: no socket between the platform and its server. And no
	// write deadline on that pipe (a deadline guards against a peer that
	// stops reading over a network; here every write would only pay a
	// timer for it, about 2% of a request's CPU).
	link, mc, err := runtime.Connect(ctx, "allinone", natsURL, storeURI, log, reg, nats.InProcessServer(ns), nats.FlusherTimeout(0))
	if err != nil {
		return fail(err)
	}
	cleanup = append(cleanup, func() {
		link.Close()
		dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer dcancel()
		_ = mc.Disconnect(dctx)
	})
	d, err := runtime.NewDeps(link.NC, mc, log, reg, 1)
	if err != nil {
		return fail(err)
	}
	d.Link, d.ReadIndex = link, c.ReadIndex
	// The consumers that write take no more work while the disk is nearly
	// full, as the gateway refuses writes: what they would write must not
	// take the room left.
	d.WritesHeld = disk.Check
	d.AddLiveCheck("jetstream_writes", func(context.Context) error {
		if msg := writeFailed.Load(); msg != nil {
			return fmt.Errorf("%s (restart the platform once space is freed)", *msg)
		}
		return nil
	})
	// The store runs beside the platform and nothing starts it again:
	// every read model and listing fails until the process restarts.
	d.AddLiveCheck("embedded_store", func(context.Context) error { return storeStopped() })

	id, err := identity.Start(ctx, d, c.Identity)
	if err != nil {
		return fail(err)
	}
	cleanup = append(cleanup, func() { _ = id.Stop() })
	boot, err := id.App.Bootstrap(ctx, c.BootstrapAdminKey, c.DataDir)
	if err != nil {
		return fail(fmt.Errorf("bootstrap: %w", err))
	}
	ag, err := agents.Start(ctx, d, agents.Config{Secret: secret, AllowHosts: c.Outbound.Hosts()})
	if err != nil {
		return fail(err)
	}
	cleanup = append(cleanup, func() { _ = ag.Stop() })
	tk, err := tickets.Start(ctx, d, tickets.Config{Secret: secret, Snapshots: c.Snapshots})
	if err != nil {
		return fail(err)
	}
	cleanup = append(cleanup, func() { _ = tk.Stop() })
	for range c.QAWorkers {
		done, err := tickets.StartQAWorker(ctx, d, tk.App, c.QAWorker)
		if err != nil {
			return fail(err)
		}
		cleanup = append(cleanup, func() { <-done })
	}
	ts, err := testingsvc.Start(ctx, d, testingsvc.Config{Secret: secret, Limits: c.Testing, AllowHosts: c.Outbound.Hosts()})
	if err != nil {
		return fail(err)
	}
	cleanup = append(cleanup, func() { _ = ts.Stop() })
	runnerCfg := c.Runner
	// The runners in this process share the stack's deployment secret (to
	// open workspace secrets) and its outbound allow-list.
	runnerCfg.SecretKey, runnerCfg.Env = secret, c.Outbound
	runnerCfg.Hold = disk.Check // queued runs wait while the disk is nearly full
	for range c.Runners {
		done, err := testingsvc.StartRunner(ctx, d, runnerCfg)
		if err != nil {
			return fail(err)
		}
		cleanup = append(cleanup, func() { <-done })
	}
	whCfg := webhooks.Config{Secret: secret, AllowHosts: c.Outbound.Hosts(), AutoDisable: c.WebhookAutoDisable.Rule(),
		MaxWaitingPerWorkspace: webhooks.MaxWaitingOption(c.WebhookMaxWaitingPerWorkspace), MaxPerWorkspace: c.WebhookMaxPerWorkspace,
		Dispatcher: webhookdispatcher.Options{TimeUnit: c.WebhookTimeUnit, PerWorkspace: c.WebhookPerWorkspace}}
	wh, err := webhooks.Start(ctx, d, whCfg)
	if err != nil {
		return fail(err)
	}
	cleanup = append(cleanup, func() { _ = wh.Stop() })
	whd, err := webhooks.StartDispatcher(ctx, d, whCfg, webhooks.SharedRegistry(wh))
	if err != nil {
		return fail(err)
	}
	cleanup = append(cleanup, whd.Stop)

	settings := c.Config.Settings()
	settings.ConsoleSecret = secret // seals the console's sessions
	settings.WritesHeld = disk.Check
	settings.InProcess = !c.OverNATS // every service is served here
	gw, err := gateway.New(ctx, d, settings)
	if err != nil {
		return fail(err)
	}
	select {
	case <-gw.KeysReady():
	case <-time.After(30 * time.Second):
		return fail(errors.New("gateway: API keys not loaded after 30s"))
	}
	ln, err := net.Listen("tcp", c.HTTPAddr)
	if err != nil {
		return fail(fmt.Errorf("VOICEAI_HTTP_ADDR %q: cannot listen there: %w", c.HTTPAddr, err))
	}

	s := &Stack{
		Addr: ln.Addr().String(), NATSURL: natsURL, MongoURI: storeURI,
		AdminKey: boot.GeneratedSecret, KeyFile: boot.KeyFile,
		gateway: gw, agents: ag.Handler, probes: d.Probes(), link: link,
		cancel: cancel, done: make(chan struct{}),
	}
	var lost atomic.Bool
	go func() {
		select {
		case <-link.Lost():
			lost.Store(true)
			cancel()
		case <-ctx.Done():
		}
	}()
	go func() {
		err := gw.Serve(ctx, ln)
		if lost.Load() {
			err = runtime.ErrConnectionLost
		}
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
		s.err = err
		close(s.done)
	}()
	return s, nil
}
