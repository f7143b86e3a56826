// Package agents wires the agents service: its stream, read model,
// projector, the call log it follows from PLATFORM, and HTTP-over-NATS
// endpoint. Both its own binary and the
// all-in-one binary start it through Start.
package agents

import (
	"context"
	"errors"
	"time"

	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"

	"github.com/voiceai-platform/voiceai/pkg/agentconfig"
	"github.com/voiceai-platform/voiceai/pkg/config"
	"github.com/voiceai-platform/voiceai/pkg/cursor"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/outbound"
	"github.com/voiceai-platform/voiceai/pkg/projection"
	"github.com/voiceai-platform/voiceai/pkg/runtime"
	"github.com/voiceai-platform/voiceai/pkg/seal"
	"github.com/voiceai-platform/voiceai/pkg/tick"
	"github.com/voiceai-platform/voiceai/services/agents/adapters"
	"github.com/voiceai-platform/voiceai/services/agents/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/agents/app"
	"github.com/voiceai-platform/voiceai/services/agents/ports"
)

// Name of the service on the bus.
const Name = "agents"

// Service is a running agents service.
type Service = runtime.Service[*app.App]

// Config is what the service needs beyond its infrastructure.
type Config struct {
	// Secret is the deployment secret (VOICEAI_SECRET_KEY): cursors and
	// the workspace secrets' sealing key derive from it.
	Secret string
	// AllowHosts may be private and reached over plain http by agents'
	// own model endpoints (the operator's outbound allow-list).
	AllowHosts []string
}

// Start runs the service until ctx ends.
func Start(ctx context.Context, d runtime.Deps, c Config) (*Service, error) {
	if c.Secret == "" {
		return nil, errors.New("agents: the deployment secret is empty")
	}
	if err := eventstore.EnsureEventStreams(ctx, d.JS, d.StreamReplicas, events.AgentsStream, events.PlatformStream); err != nil {
		return nil, err
	}
	db := d.Database(Name)
	store, err := adapters.NewReadModel(ctx, db)
	if err != nil {
		return nil, err
	}
	storeSecrets, err := adapters.NewSecretReadModel(ctx, db)
	if err != nil {
		return nil, err
	}
	sealer, err := seal.New(runtime.SubKey(c.Secret, agentconfig.SecretPurpose))
	if err != nil {
		return nil, err
	}
	// Listings read the store, or in memory mode indexes built from the
	// streams before the service answers: the embedded store cannot
	// index, and would read every agent of every workspace for a page.
	// The calls are copied into the store either way; in memory mode each
	// replica also keeps them all.
	var rm app.ReadModel = store
	var secrets app.SecretReadModel = storeSecrets
	storeCalls := adapters.NewCallLog(db)
	adapters.GuardCalls(ctx, d.JS, storeCalls, d.Logger, d.WritesHeld) // until ctx ends
	var calls app.CallLog = storeCalls
	agents := projection.Config{Stream: events.AgentsStream, Durable: "agents-readmodel", FilterSubjects: []string{events.AgentsAll}}
	secretsCopy := projection.Config{Stream: events.AgentsStream, Durable: "agents-secrets", FilterSubjects: []string{events.SecretsAll}}
	if d.ReadIndex == config.ReadIndexMemory {
		if rm, secrets, err = followAgents(ctx, d); err != nil {
			return nil, err
		}
		mem := memory.NewCallLog()
		if err := adapters.FollowCallsInto(ctx, d.JS, storeCalls, mem, d.Logger); err != nil {
			return nil, err
		}
		calls = mem
		agents, secretsCopy = agents.UnreadCopy(), secretsCopy.UnreadCopy()
	}
	a := app.New(eventstore.New(d.JS, events.AgentsStream), rm, secrets, sealer, outbound.NewGuard(c.AllowHosts).HostAllowed, d.Logger, d.Clock())
	a.Calls = calls
	// The store is the durable copy (and what listings read in store
	// mode), written off the request path by its projectors.
	d.StartProjection(ctx, store.Agents, agents, adapters.Handler)
	d.StartProjection(ctx, storeSecrets.Secrets, secretsCopy, adapters.SecretsHandler)
	d.WatchConsumer(events.PlatformStream, adapters.CallsDurable)
	go tick.Restarting.Restart(ctx, func(ctx context.Context) error {
		return adapters.FollowCalls(ctx, d.JS, storeCalls, d.Logger, d.WritesHeld)
	}, func(err error, again time.Duration) {
		d.Logger.Error("call log stopped; starting it again", "err", err, "after", again)
	})
	a.Cursors = cursor.NewCodec(runtime.SubKey(c.Secret, "agents/cursor"))
	return runtime.Serve(d, Name, a, &ports.Handlers{App: a})
}

// followAgents builds the in-memory listings of agents and secrets from
// the AGENTS stream (each one's last event), then keeps them live; it
// returns once the replay is applied. The service's own writes are
// applied at once as well (the repositories' projection), so a caller
// lists what it has just written.
func followAgents(ctx context.Context, d runtime.Deps) (*memory.ReadModel, *memory.Secrets, error) {
	agents := memory.NewReadModel()
	secrets := memory.NewSecrets(agents)
	err := eventstore.FollowState(ctx, d.JS, events.AgentsStream, []string{events.AgentsAll, events.SecretsAll}, d.Logger, func(seq uint64, msg proto.Message) {
		// In memory: Apply never fails.
		if a, ok := events.StateOf[*agentsv1.Agent](msg); ok {
			_ = agents.Apply(ctx, seq, a)
		} else if s, ok := events.StateOf[*agentsv1.WorkspaceSecret](msg); ok {
			_ = secrets.Apply(ctx, seq, s)
		}
	}, func() { agents.Reset(); secrets.Reset() })
	return agents, secrets, err
}
