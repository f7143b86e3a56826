package keycache

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"
	identityv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/identity/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

// The IDENTITY stream made anew (restored from a backup taken before a
// key was created) empties the cache and loads it from the new stream: a
// key the restored stream does not hold stops working. Before, every
// running gateway went on accepting it until restarted, and nobody could
// revoke it (identity answered 404).
func TestAKeyTheRestoredStreamLacksStopsWorking(t *testing.T) {
	ctx := context.Background()
	js := testenv.JetStreamAt(t, testenv.StartNATS(t))
	cfg := jetstream.StreamConfig{Name: events.IdentityStream, Subjects: []string{"identity.evt.>"}}
	if _, err := js.CreateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	created := func(id, secret string) {
		t.Helper()
		k := key(secret, func(k *identityv1.ApiKey) { k.KeyId = id })
		subject, err := events.APIKeySubject(k.WorkspaceId, k.KeyId)
		if err != nil {
			t.Fatal(err)
		}
		meta := esproto.Meta(ctx, k.WorkspaceId, "", time.Now())
		if _, err := esproto.Append(ctx, eventstore.New(js, events.IdentityStream), subject, 0, meta, &identityv1.ApiKeyCreated{Meta: meta, Key: k}); err != nil {
			t.Fatal(err)
		}
	}
	created("key_kept", "kept-secret")
	created("key_lost", "lost-secret")
	cache := New()
	f, err := Start(t.Context(), js, cache, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if _, st := cache.Authenticate("lost-secret", time.Now()); st != Valid {
		t.Fatalf("before the restore: %v", st)
	}

	testenv.RemakeStream(t, js, events.IdentityStream, func(ctx context.Context) error {
		_, err := js.CreateStream(ctx, cfg)
		return err
	})
	created("key_kept", "kept-secret") // the backup held this one only
	testkit.Eventually(t, 30*time.Second, "the key the restored stream lacks refused", func() bool {
		_, lost := cache.Authenticate("lost-secret", time.Now())
		_, kept := cache.Authenticate("kept-secret", time.Now())
		return lost == Unknown && kept == Valid
	})
}
