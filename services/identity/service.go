// Package identity wires the identity service: workspaces, service
// accounts and API keys. Its key events feed every gateway's key cache.
package identity

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/config"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/projection"
	"github.com/voiceai-platform/voiceai/pkg/runtime"
	"github.com/voiceai-platform/voiceai/services/identity/adapters"
	"github.com/voiceai-platform/voiceai/services/identity/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/identity/app"
	"github.com/voiceai-platform/voiceai/services/identity/operator"
	"github.com/voiceai-platform/voiceai/services/identity/ports"
)

// Name of the service on the bus.
const Name = "identity"

// Service is a running identity service.
type Service = runtime.Service[*app.App]

// Config is what the environment tells identity.
type Config struct {
	// The bounds of a workspace (app.Limits; 0: no bound).
	MaxKeysPerWorkspace     int `env:"VOICEAI_MAX_API_KEYS_PER_WORKSPACE" envDefault:"1000"`
	MaxAccountsPerWorkspace int `env:"VOICEAI_MAX_SERVICE_ACCOUNTS_PER_WORKSPACE" envDefault:"1000"`
	MaxMembersPerWorkspace  int `env:"VOICEAI_MAX_MEMBERS_PER_WORKSPACE" envDefault:"10000"`
}

// DefaultConfig is the environment's defaults.
var DefaultConfig = Config{MaxKeysPerWorkspace: 1000, MaxAccountsPerWorkspace: 1000, MaxMembersPerWorkspace: 10_000}

// Validate checks the bounds.
func (c Config) Validate() error {
	for _, b := range []struct {
		name string
		n    int
	}{
		{"VOICEAI_MAX_API_KEYS_PER_WORKSPACE", c.MaxKeysPerWorkspace},
		{"VOICEAI_MAX_SERVICE_ACCOUNTS_PER_WORKSPACE", c.MaxAccountsPerWorkspace},
		{"VOICEAI_MAX_MEMBERS_PER_WORKSPACE", c.MaxMembersPerWorkspace},
	} {
		if b.n < 0 {
			return fmt.Errorf("%s %d: want 0 (no bound) or more", b.name, b.n)
		}
	}
	return nil
}

// Start runs the service until ctx ends. Listings read the store, or in
// memory mode a read model built from the stream before the service
// answers.
func Start(ctx context.Context, d runtime.Deps, c Config) (*Service, error) {
	if err := eventstore.EnsureEventStreams(ctx, d.JS, d.StreamReplicas, events.IdentityStream); err != nil {
		return nil, err
	}
	db := d.Database(Name)
	store := adapters.OpenStore(db)
	if d.ReadIndex != config.ReadIndexMemory {
		var err error
		if store, err = adapters.NewReadModel(ctx, db); err != nil {
			return nil, err
		}
	}
	// The store is the durable copy: one projector per collection.
	project := func(coll *mongo.Collection, durable, filter string) {
		d.StartProjection(ctx, coll, projection.Config{Stream: events.IdentityStream, Durable: durable, FilterSubjects: []string{filter}}, store.Handler(coll))
	}
	project(store.Accounts, adapters.AccountsDurable, events.IdentityAccountsAll)
	project(store.Keys, adapters.KeysDurable, events.IdentityKeysAll)
	project(store.Users, adapters.UsersDurable, events.IdentityUsersAll)
	var rm app.ReadModel = store
	if d.ReadIndex == config.ReadIndexMemory {
		mem, err := followIdentity(ctx, d)
		if err != nil {
			return nil, err
		}
		rm = mem
	}
	a := app.New(eventstore.New(d.JS, events.IdentityStream), rm, d.Logger, d.Clock())
	a.Limits = app.Limits{Keys: c.MaxKeysPerWorkspace, Accounts: c.MaxAccountsPerWorkspace, Members: c.MaxMembersPerWorkspace}
	s, err := runtime.Serve(d, Name, a, &ports.Handlers{App: a})
	if err != nil {
		return nil, err
	}
	if err := operator.Register(s.Endpoint, a); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

// followIdentity builds the in-memory read model from each subject's last
// event and keeps it current; it returns once the replay is applied.
func followIdentity(ctx context.Context, d runtime.Deps) (*memory.ReadModel, error) {
	rm := memory.NewReadModel()
	err := eventstore.FollowState(ctx, d.JS, events.IdentityStream, []string{events.IdentityAll}, d.Logger, func(seq uint64, msg proto.Message) {
		if doc := app.DocOf(msg); doc != nil {
			_ = rm.Put(ctx, seq, doc) // in memory: never fails
		}
	}, rm.Reset)
	return rm, err
}
