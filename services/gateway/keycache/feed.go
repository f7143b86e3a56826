package keycache

import (
	"context"
	"log/slog"

	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"
	identityv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/identity/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
)

// Start keeps cache current from the IDENTITY stream. Events are
// state-carrying, so replaying the last event of each key and account
// subject rebuilds the current state of all of them; new events follow
// live. The follower is ready once every existing key is loaded.
//
// The IDENTITY stream made anew (a restore) empties the cache first, so
// that a key the restored stream does not hold stops working, and the
// replay of the new stream is what the catch-up waits for.
func Start(ctx context.Context, js jetstream.JetStream, cache *Cache, log *slog.Logger) (*eventstore.Follower, error) {
	f, err := eventstore.Follow(ctx, js, events.IdentityStream, []string{events.IdentityKeysAll, events.IdentityAccountsAll}, true,
		func(rec eventstore.Record) {
			msg, err := esproto.Decode(rec)
			if err != nil {
				log.Error("identity event undecodable", "seq", rec.Seq, "err", err)
				cache.Applied(rec.Seq)
				return
			}
			if k, ok := events.StateOf[*identityv1.ApiKey](msg); ok {
				cache.PutKey(k)
			} else if a, ok := events.StateOf[*identityv1.ServiceAccount](msg); ok {
				cache.PutAccount(a)
			}
			cache.Applied(rec.Seq)
		})
	if err != nil {
		return nil, err
	}
	f.WhenMadeAnew(func() {
		log.Warn("the IDENTITY stream was made anew: the key cache is emptied and loaded again from it")
		cache.Reset()
	})
	return f, nil
}
