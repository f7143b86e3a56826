// Package testing wires the testing service (tests, folders, invocations:
// its streams, read model, enqueuer and HTTP-over-NATS endpoint) and the
// runner workers, which run as their own binary (testing-runner) and
// scale on their own. The all-in-one binary starts both.
package testing

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/agentconfig"
	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/config"
	"github.com/voiceai-platform/voiceai/pkg/convseal/kvkeys"
	"github.com/voiceai-platform/voiceai/pkg/cursor"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/llm"
	"github.com/voiceai-platform/voiceai/pkg/outbound"
	"github.com/voiceai-platform/voiceai/pkg/projection"
	"github.com/voiceai-platform/voiceai/pkg/runtime"
	"github.com/voiceai-platform/voiceai/pkg/seal"
	"github.com/voiceai-platform/voiceai/pkg/tick"
	"github.com/voiceai-platform/voiceai/services/testing/adapters"
	"github.com/voiceai-platform/voiceai/services/testing/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/meaning"
	"github.com/voiceai-platform/voiceai/services/testing/modelclient"
	"github.com/voiceai-platform/voiceai/services/testing/offline"
	"github.com/voiceai-platform/voiceai/services/testing/ports"
	"github.com/voiceai-platform/voiceai/services/testing/runner"
)

// Name of the service on the bus.
const Name = "testing"

// RunnerName is the runners' service on the bus: they serve
// simulate-conversation.
const RunnerName = "testing-runner"

// Service is a running testing service.
type Service = runtime.Service[*app.App]

// Limits are the workspaces' quotas and the run retention, from VOICEAI_*
// variables (see app.Limits; 0 is no limit).
type Limits struct {
	// MaxActiveInvocations: a workspace's invocations queued or running.
	MaxActiveInvocations int `env:"VOICEAI_MAX_ACTIVE_INVOCATIONS" envDefault:"20"`
	// MaxQueuedRuns: a workspace's runs not yet finished (the default is
	// one largest invocation, 5,000 tests repeated 50 times).
	MaxQueuedRuns int64 `env:"VOICEAI_MAX_QUEUED_RUNS" envDefault:"250000"`
	// RunRetention is how long run results are kept in TESTRUNS (its
	// MaxAge); 0 keeps them forever.
	RunRetention time.Duration `env:"VOICEAI_RUN_RETENTION" envDefault:"2160h"`
	// MaxLoadCallers bounds one load test step's simultaneous callers.
	MaxLoadCallers int `env:"VOICEAI_MAX_LOAD_CALLERS" envDefault:"500"`
}

// MinRunRetention is the shortest run retention: an invocation must
// finish well within it (its queued and completing records live in
// TESTRUNS too), and it is longer than TESTRUNS' duplicate window.
const MinRunRetention = 24 * time.Hour

// Validate checks the limits.
func (l Limits) Validate() error {
	if l.MaxActiveInvocations < 0 || l.MaxQueuedRuns < 0 {
		return fmt.Errorf("VOICEAI_MAX_ACTIVE_INVOCATIONS %d and VOICEAI_MAX_QUEUED_RUNS %d: want 0 (no limit) or more", l.MaxActiveInvocations, l.MaxQueuedRuns)
	}
	if l.MaxLoadCallers < 0 || l.MaxLoadCallers > 10_000 {
		return fmt.Errorf("VOICEAI_MAX_LOAD_CALLERS %d: want 1..10000 (0: 500)", l.MaxLoadCallers)
	}
	if l.RunRetention != 0 && l.RunRetention < MinRunRetention {
		return fmt.Errorf("VOICEAI_RUN_RETENTION %s: want 0 (keep runs forever) or at least %s", l.RunRetention, MinRunRetention)
	}
	return nil
}

// Config configures the testing service.
type Config struct {
	// Secret is the deployment secret: cursors are signed with a sub-key.
	Secret string
	Limits Limits
	// AllowHosts may be private and reached over plain http by the own
	// endpoint of a run's agent_config_override, as by agents' (the
	// operator's outbound allow-list).
	AllowHosts []string
}

// Start runs the service until ctx ends.
func Start(ctx context.Context, d runtime.Deps, c Config) (*Service, error) {
	if err := c.Limits.Validate(); err != nil {
		return nil, err
	}
	// The service owns the runs' retention, set first: runners ensure
	// TESTRUNS without one, which leaves it as set here.
	if err := adapters.EnsureRunRetention(ctx, d.JS, d.StreamReplicas, c.Limits.RunRetention); err != nil {
		return nil, err
	}
	if err := adapters.EnsureStreams(ctx, d.JS, d.StreamReplicas); err != nil {
		return nil, err
	}
	// The service that queues runs exports the queue, so a backlog with no
	// runner at all is visible too (alert: runs queued, no runner pulling).
	d.WatchStream(events.TestJobsStream)
	var err error
	store := adapters.OpenStore(d.Database(Name))
	var listings app.ReadModel = store
	if d.ReadIndex == config.ReadIndexMemory {
		if listings, err = followTesting(ctx, d); err != nil {
			return nil, err
		}
	} else if listings, err = adapters.NewReadModel(ctx, d.Database(Name)); err != nil {
		return nil, err
	}
	a := app.New(adapters.JetStreamPorts(d.JS, d.Logger, d.WritesHeld), listings, d.Logger, d.Clock())
	a.HostAllowed = outbound.NewGuard(c.AllowHosts).HostAllowed
	a.Conversations = adapters.NewStoredConversations(d.NC)
	// Analyses are sealed under their conversation's key: labels read
	// them.
	if a.ConversationKeys, err = kvkeys.Open(ctx, d.JS, d.StreamReplicas, c.Secret); err != nil {
		return nil, err
	}
	deleted := adapters.NewDeletedConversations()
	deleted.Follow(ctx, d.JS, d.Logger)
	a.ConversationDeleted = deleted.Deleted
	a.WritesHeld = d.WritesHeld
	a.Limits = app.Limits{MaxActiveInvocations: c.Limits.MaxActiveInvocations, MaxQueuedRuns: c.Limits.MaxQueuedRuns,
		RunRetention: c.Limits.RunRetention, MaxLoadCallers: c.Limits.MaxLoadCallers}
	if d.Metrics != nil {
		refusals, err := quotaRefusals(d.Metrics)
		if err != nil {
			return nil, err
		}
		a.QuotaRefused = func(quota string) { refusals.WithLabelValues(quota).Inc() }
	}
	// The store is the durable copy (and what listings read in store mode),
	// written off the request path by its projectors; behind the in-memory
	// index nothing reads it at once, so it is written in large batches.
	entries := projection.Config{Stream: events.TestingStream, Durable: "testing-entries",
		FilterSubjects: []string{"testing.evt.*.test.*", "testing.evt.*.folder.*"}}
	invocations := projection.Config{Stream: events.TestingStream, Durable: "testing-invocations",
		FilterSubjects: []string{events.TestingInvocationsAll}}
	if d.ReadIndex == config.ReadIndexMemory {
		entries, invocations = entries.UnreadCopy(), invocations.UnreadCopy()
	}
	d.StartProjection(ctx, store.EntryStore, entries, adapters.EntriesHandler)
	d.StartProjection(ctx, store.InvocationStore, invocations, adapters.InvocationsHandler)
	go tick.Restarting.Restart(ctx, a.RunEnqueuer, func(err error, again time.Duration) {
		d.Logger.Error("enqueuer stopped; starting it again", "err", err, "after", again)
	})
	go a.RunCompletionSweeper(ctx, 5*time.Second)
	a.Cursors = cursor.NewCodec(runtime.SubKey(c.Secret, "testing/cursor"))
	return runtime.Serve(d, Name, a, &ports.Handlers{App: a})
}

// RunnerConfig configures runner workers, from VOICEAI_* variables.
type RunnerConfig struct {
	// The platform's model provider: it plays agents that have no endpoint
	// of their own and, unless VOICEAI_JUDGE_* say otherwise, judges.
	Provider   string        `env:"VOICEAI_LLM_PROVIDER" envDefault:"offline"`
	BaseURL    string        `env:"VOICEAI_LLM_BASE_URL"`
	APIKey     string        `env:"VOICEAI_LLM_API_KEY"`
	LLMModel   string        `env:"VOICEAI_LLM_MODEL"`
	LLMTimeout time.Duration `env:"VOICEAI_LLM_TIMEOUT" envDefault:"60s"`
	// AgentModels are further models of the provider an agent may name as
	// its llm (comma-separated); any other llm is played by LLMModel.
	AgentModels string `env:"VOICEAI_LLM_AGENT_MODELS"`
	// The judge model: it judges every run and plays the simulated user.
	// Each setting defaults to its VOICEAI_LLM_* counterpart.
	JudgeProvider string `env:"VOICEAI_JUDGE_PROVIDER"`
	JudgeBaseURL  string `env:"VOICEAI_JUDGE_BASE_URL"`
	JudgeAPIKey   string `env:"VOICEAI_JUDGE_API_KEY"`
	JudgeModel    string `env:"VOICEAI_JUDGE_MODEL"`
	// Agents' own endpoints (custom-llm).
	outbound.Env
	EndpointConcurrency int           `env:"VOICEAI_AGENT_ENDPOINT_CONCURRENCY" envDefault:"4"`
	EndpointTimeout     time.Duration `env:"VOICEAI_AGENT_ENDPOINT_TIMEOUT" envDefault:"30s"`
	// EndpointIdleTimeout bounds the wait between two chunks of an
	// endpoint's streamed answer (a stall); EndpointMaxAnswerBytes bounds
	// the answer (content and tool arguments). Zero: 10s, 1 MiB.
	EndpointIdleTimeout    time.Duration `env:"VOICEAI_AGENT_ENDPOINT_IDLE_TIMEOUT" envDefault:"10s"`
	EndpointMaxAnswerBytes int64         `env:"VOICEAI_AGENT_ENDPOINT_MAX_ANSWER_BYTES" envDefault:"1048576"`
	// LLMStream: the platform's own model clients (VOICEAI_LLM_* and
	// VOICEAI_JUDGE_*) stream their answers too, so that an agent the
	// platform's model plays has a real time to first token.
	LLMStream bool `env:"VOICEAI_LLM_STREAM"`
	// EnvVars may be named by agents as env_var_label (comma-separated).
	EnvVars string `env:"VOICEAI_AGENT_ENV_VARS"`
	// SecretKey opens workspace secrets (the deployment secret); without
	// it, agents whose endpoint key is a workspace secret fail their runs.
	SecretKey   string `env:"VOICEAI_SECRET_KEY"`
	Concurrency int    `env:"VOICEAI_RUNNER_CONCURRENCY" envDefault:"8"`
	// MaxLoadCallers bounds a load test step's endpoint concurrency on
	// this runner (the testing service bounds the steps by its own).
	MaxLoadCallers int           `env:"VOICEAI_MAX_LOAD_CALLERS" envDefault:"500"`
	RunTimeout     time.Duration `env:"VOICEAI_RUN_TIMEOUT" envDefault:"2m"`
	AckWait        time.Duration `env:"VOICEAI_RUNNER_ACK_WAIT" envDefault:"30s"`
	// JudgeVotes: a failure verdict of a model judge is judged again, this
	// many verdicts in all, and the majority decides (1: no re-judging).
	JudgeVotes int `env:"VOICEAI_JUDGE_VOTES" envDefault:"3"`
	// ModelCacheTTL is how long a cached model answer is kept (invocations
	// with cache_model_responses).
	ModelCacheTTL time.Duration `env:"VOICEAI_MODEL_CACHE_TTL" envDefault:"24h"`
	// Hold, when set, holds the runner's taking of jobs while it answers
	// an error (runner.Worker.Hold).
	Hold func() error `env:"-"`
}

// judge is the judge model's settings, each defaulting to the platform
// provider's.
func (c RunnerConfig) judge() (provider, baseURL, apiKey, model string) {
	or := func(v, d string) string {
		if v != "" {
			return v
		}
		return d
	}
	return or(c.JudgeProvider, c.Provider), or(c.JudgeBaseURL, c.BaseURL), or(c.JudgeAPIKey, c.APIKey), or(c.JudgeModel, c.LLMModel)
}

func checkProvider(prefix, provider, baseURL, model string) error {
	switch provider {
	case "offline":
		// The offline model reads meaning with WordNet: the shipped one,
		// or the operator's (VOICEAI_OFFLINE_WORDNET), checked here so a
		// bad path fails at start, not at the first run.
		if _, err := meaning.Default(); err != nil {
			return err
		}
	case "offline-lexical":
		if prefix != "VOICEAI_JUDGE" {
			return fmt.Errorf("%s_PROVIDER offline-lexical: only the judge can be the lexical offline judge", prefix)
		}
	case "openai":
		if baseURL == "" || model == "" {
			return fmt.Errorf("%s_PROVIDER=openai needs %[1]s_BASE_URL and %[1]s_MODEL", prefix)
		}
	default:
		return fmt.Errorf("%s_PROVIDER %q: want offline, openai or (for the judge) offline-lexical", prefix, provider)
	}
	return nil
}

// Validate checks the configuration.
func (c RunnerConfig) Validate() error {
	if err := config.CheckSecret(c.SecretKey); err != nil {
		return err
	}
	if err := checkProvider("VOICEAI_LLM", c.Provider, c.BaseURL, c.LLMModel); err != nil {
		return err
	}
	jp, jurl, _, jmodel := c.judge()
	if err := checkProvider("VOICEAI_JUDGE", jp, jurl, jmodel); err != nil {
		return err
	}
	if c.EndpointConcurrency < 1 || c.EndpointConcurrency > 1024 {
		return fmt.Errorf("VOICEAI_AGENT_ENDPOINT_CONCURRENCY %d: want 1..1024", c.EndpointConcurrency)
	}
	if c.EndpointTimeout < time.Second || c.EndpointTimeout > 10*time.Minute {
		return fmt.Errorf("VOICEAI_AGENT_ENDPOINT_TIMEOUT %s: want 1s..10m", c.EndpointTimeout)
	}
	if c.EndpointIdleTimeout != 0 && (c.EndpointIdleTimeout < 100*time.Millisecond || c.EndpointIdleTimeout > 10*time.Minute) {
		return fmt.Errorf("VOICEAI_AGENT_ENDPOINT_IDLE_TIMEOUT %s: want 100ms..10m", c.EndpointIdleTimeout)
	}
	if c.EndpointMaxAnswerBytes != 0 && (c.EndpointMaxAnswerBytes < 1<<10 || c.EndpointMaxAnswerBytes > 64<<20) {
		return fmt.Errorf("VOICEAI_AGENT_ENDPOINT_MAX_ANSWER_BYTES %d: want 1024..67108864", c.EndpointMaxAnswerBytes)
	}
	if c.Concurrency < 1 || c.Concurrency > 1024 {
		return fmt.Errorf("VOICEAI_RUNNER_CONCURRENCY %d: want 1..1024", c.Concurrency)
	}
	if c.JudgeVotes < 1 || c.JudgeVotes > 9 || c.JudgeVotes%2 == 0 {
		return fmt.Errorf("VOICEAI_JUDGE_VOTES %d: want an odd number from 1 to 9 (a majority must decide)", c.JudgeVotes)
	}
	if c.ModelCacheTTL < time.Minute {
		return fmt.Errorf("VOICEAI_MODEL_CACHE_TTL %s: want at least 1m", c.ModelCacheTTL)
	}
	if c.RunTimeout <= 0 || c.AckWait < time.Second {
		return fmt.Errorf("VOICEAI_RUN_TIMEOUT and VOICEAI_RUNNER_ACK_WAIT must be positive (ack wait at least 1s)")
	}
	return nil
}

// Model builds the judge model.
func (c RunnerConfig) Model() (runner.Model, error) {
	provider, baseURL, apiKey, model := c.judge()
	return c.model(provider, baseURL, apiKey, model)
}

func (c RunnerConfig) model(provider, baseURL, apiKey, model string) (runner.Model, error) {
	switch provider {
	case "offline-lexical": // the first offline judge, to compare with (it reads words, not meaning)
		return offline.Lexical{}, nil
	case "openai":
	default:
		return offline.Model{}, nil
	}
	client, err := llm.New(llm.Config{BaseURL: baseURL, APIKey: apiKey, Model: model, Timeout: c.LLMTimeout, Stream: c.LLMStream})
	if err != nil {
		return nil, err
	}
	return modelclient.OpenAI{Client: client}, nil
}

// Agents builds what plays the agents: their own endpoints, else the
// platform's provider (its models observed by metrics when given).
func (c RunnerConfig) Agents(js jetstream.JetStream, metrics *runner.Metrics) (*modelclient.Endpoints, error) {
	platform := modelclient.PlatformAgents{Served: map[string]runner.Model{}}
	var err error
	observe := func(m runner.Model) runner.Model {
		if o, ok := m.(modelclient.OpenAI); ok && metrics != nil {
			o.Observe = metrics.ObserveModel(o.Provider(), o.ModelName())
			return o
		}
		return m
	}
	if platform.Default, err = c.model(c.Provider, c.BaseURL, c.APIKey, c.LLMModel); err != nil {
		return nil, err
	}
	platform.Default = observe(platform.Default)
	if c.Provider == "openai" {
		for _, name := range strings.Split(c.AgentModels, ",") {
			if name = strings.TrimSpace(name); name != "" {
				m, err := c.model(c.Provider, c.BaseURL, c.APIKey, name)
				if err != nil {
					return nil, err
				}
				platform.Served[name] = observe(m)
			}
		}
		platform.Served[c.LLMModel] = platform.Default
	}
	e := &modelclient.Endpoints{Platform: platform, Guard: outbound.NewGuard(c.Hosts()), EnvVars: map[string]bool{},
		Concurrency: c.EndpointConcurrency, Timeout: c.EndpointTimeout,
		IdleTimeout: c.EndpointIdleTimeout, MaxAnswerBytes: c.EndpointMaxAnswerBytes}
	for _, name := range strings.Split(c.EnvVars, ",") {
		if name = strings.TrimSpace(name); name != "" {
			e.EnvVars[name] = true
		}
	}
	if c.SecretKey != "" {
		sealer, err := seal.New(runtime.SubKey(c.SecretKey, agentconfig.SecretPurpose))
		if err != nil {
			return nil, err
		}
		e.Secrets = &adapters.Secrets{Store: eventstore.New(js, events.AgentsStream), Sealer: sealer}
	}
	if metrics != nil {
		e.Observe = metrics.ObserveModel(agentconfig.CustomLLM, "")
	}
	return e, nil
}

// StartRunner runs one runner worker until ctx ends; done is closed once
// its in-flight runs have finished.
func StartRunner(ctx context.Context, d runtime.Deps, c RunnerConfig) (done <-chan struct{}, err error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := adapters.EnsureStreams(ctx, d.JS, d.StreamReplicas); err != nil {
		return nil, err
	}
	model, err := c.Model()
	if err != nil {
		return nil, err
	}
	var metrics *runner.Metrics
	if d.Metrics != nil {
		if metrics, err = runner.NewMetrics(d.Metrics); err != nil {
			return nil, err
		}
		if o, ok := model.(modelclient.OpenAI); ok {
			o.Observe = metrics.ObserveModel(o.Provider(), o.ModelName())
			model = o
		}
	}
	agents, err := c.Agents(d.JS, metrics)
	if err != nil {
		return nil, err
	}
	exec := &runner.Executor{Now: d.Clock(), Model: model, Agents: agents, TimeLimit: c.RunTimeout, JudgeVotes: c.JudgeVotes}
	if _, ok := model.(runner.Cacheable); ok { // the offline model has nothing worth caching
		if exec.Cache, err = adapters.OpenKVCache(ctx, d.JS, c.ModelCacheTTL, d.StreamReplicas, d.Logger); err != nil {
			return nil, err
		}
	}
	a := app.New(adapters.JetStreamPorts(d.JS, d.Logger, d.WritesHeld), nil, d.Logger, d.Clock())
	// Conversation analysis reads recorded conversations from the tickets
	// service, on the caller's behalf.
	stored := adapters.NewStoredConversations(d.NC)
	a.Conversations, a.ConversationDocuments = stored, stored
	// An analysis is sealed under its conversation's key, which the
	// deployment secret opens: a runner without it records none.
	if c.SecretKey != "" {
		if a.ConversationKeys, err = kvkeys.Open(ctx, d.JS, d.StreamReplicas, c.SecretKey); err != nil {
			return nil, err
		}
	}
	w := &runner.Worker{
		App: a, Ports: adapters.NewRunnerPorts(d.JS, c.AckWait, d.Logger), Exec: exec,
		Concurrency: c.Concurrency, AckWait: c.AckWait, Log: d.Logger, Metrics: metrics, MaxLoadCallers: c.MaxLoadCallers,
		Hold: c.Hold,
	}
	// The runner also serves simulate-conversation: the same engine, now,
	// within the time the gateway waits for it.
	simulations := &runner.Executor{Now: d.Clock(), Model: model, Agents: agents, TimeLimit: min(c.RunTimeout, api.SimulationTimeout), JudgeVotes: c.JudgeVotes}
	endpoint, _, err := runtime.ServeHTTP(d, RunnerName, api.Serve(RunnerName, ports.NewSimulator(a, simulations)))
	if err != nil {
		return nil, err
	}
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		if err := w.Run(ctx); err != nil {
			d.Logger.Error("runner stopped", "err", err)
		}
		_ = endpoint.Stop()
	}()
	return ch, nil
}

// followTesting builds the in-memory read model from the last event of
// every test, folder and invocation and keeps it current; it returns once
// the replay is applied.
func followTesting(ctx context.Context, d runtime.Deps) (*memory.Index, error) {
	m := memory.NewIndex()
	err := eventstore.FollowState(ctx, d.JS, events.TestingStream, []string{events.TestingAll}, d.Logger, func(seq uint64, msg proto.Message) {
		switch s := app.StateOf(msg).(type) {
		case *testingv1.Test:
			_ = m.ApplyTest(ctx, seq, s)
		case *testingv1.Folder:
			_ = m.ApplyFolder(ctx, seq, s)
		case *testingv1.Invocation:
			_ = m.ApplyInvocation(ctx, seq, s)
		}
	}, m.Reset)
	return m, err
}

// quotaRefusals registers the count of requests a quota refused, by
// quota, each quota shown from zero.
func quotaRefusals(reg prometheus.Registerer) (*prometheus.CounterVec, error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "voiceai_testing_quota_refusals_total",
		Help: "Run-tests and resubmit requests refused 429 quota_exceeded, by the workspace quota they would have exceeded (active_invocations, queued_runs).",
	}, []string{"quota"})
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return nil, err
		}
		if c, _ = are.ExistingCollector.(*prometheus.CounterVec); c == nil {
			return nil, err
		}
	}
	for _, q := range []string{app.QuotaActiveInvocations, app.QuotaQueuedRuns} {
		c.WithLabelValues(q)
	}
	return c, nil
}
