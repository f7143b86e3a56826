// Package agents wires the agents service: its stream, read model,
// projector, the call log it follows from PLATFORM, and HTTP-over-NATS
// endpoint. Both its own binary and the
// all-in-one binary start it through Start.
package agents

import (
	"context"
	"errors"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/agentconfig"
	"github.com/voiceai-platform/voiceai/pkg/cursor"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/outbound"
	"github.com/voiceai-platform/voiceai/pkg/projection"
	"github.com/voiceai-platform/voiceai/pkg/runtime"
	"github.com/voiceai-platform/voiceai/pkg/seal"
	"github.com/voiceai-platform/voiceai/services/agents/adapters"
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
	rm, err := adapters.NewReadModel(ctx, db)
	if err != nil {
		return nil, err
	}
	secrets, err := adapters.NewSecretReadModel(ctx, db)
	if err != nil {
		return nil, err
	}
	sealer, err := seal.New(runtime.SubKey(c.Secret, agentconfig.SecretPurpose))
	if err != nil {
		return nil, err
	}
	a := app.New(eventstore.New(d.JS, events.AgentsStream), rm, secrets, sealer, outbound.NewGuard(c.AllowHosts).HostAllowed, d.Logger, d.Clock())
	d.WatchConsumer(events.AgentsStream, "agents-readmodel")
	projection.Start(ctx, d.JS, rm.Agents, projection.Config{
		Stream: events.AgentsStream, Durable: "agents-readmodel", FilterSubjects: []string{events.AgentsAll}, Logger: d.Logger,
	}, adapters.Handler)
	d.WatchConsumer(events.AgentsStream, "agents-secrets")
	projection.Start(ctx, d.JS, secrets.Secrets, projection.Config{
		Stream: events.AgentsStream, Durable: "agents-secrets", FilterSubjects: []string{events.SecretsAll}, Logger: d.Logger,
	}, adapters.SecretsHandler)
	a.Calls = adapters.NewCallLog(db)
	d.WatchConsumer(events.PlatformStream, adapters.CallsDurable)
	go func() {
		if err := adapters.FollowCalls(ctx, d.JS, a.Calls, d.Logger); err != nil && ctx.Err() == nil {
			d.Logger.Error("call log stopped", "err", err)
		}
	}()
	a.Cursors = cursor.NewCodec(runtime.SubKey(c.Secret, "agents/cursor"))
	return runtime.Serve(d, Name, a, &ports.Handlers{App: a})
}
