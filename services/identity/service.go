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
	// MaxKeysPerWorkspace bounds a workspace's live API keys (0: no
	// bound).
	MaxKeysPerWorkspace int `env:"VOICEAI_MAX_API_KEYS_PER_WORKSPACE" envDefault:"1000"`
}

// Validate checks the bounds.
func (c Config) Validate() error {
	if c.MaxKeysPerWorkspace < 0 {
		return fmt.Errorf("VOICEAI_MAX_API_KEYS_PER_WORKSPACE %d: want 0 (no bound) or more", c.MaxKeysPerWorkspace)
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
	a.MaxKeysPerWorkspace = c.MaxKeysPerWorkspace
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
