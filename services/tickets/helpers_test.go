package tickets

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/convseal/kvkeys"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/runtime"
	"github.com/voiceai-platform/voiceai/pkg/runtime/runtimetest"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
)

// ensureOtherStreams makes the agents' and identity's streams, which the
// directory follows, as those services would.
func ensureOtherStreams(t *testing.T, ctx context.Context, js jetstream.JetStream) {
	t.Helper()
	for name, subject := range map[string]string{events.AgentsStream: events.AgentsAll, events.IdentityStream: events.IdentityAll} {
		if _, err := eventstore.EnsureStream(ctx, js, eventstore.StreamConfig{Name: name, Subjects: []string{subject}}); err != nil {
			t.Fatal(err)
		}
	}
}

// serve calls svc's handler as caller, and answers the status and body.
func serve(svc *Service, method, path, body string) (int, string) {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	caller.SetHeaders(req.Header)
	rec := httptest.NewRecorder()
	svc.Handler.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// replicaDeps starts one NATS and one MongoDB for the test and answers a
// context that ends with it and a maker of the dependencies a replica of
// the service starts with: the tests that start several replicas, or one
// after another, on the same stores all set up this way.
func replicaDeps(t *testing.T) (context.Context, func() runtime.Deps) {
	env := testenv.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx, func() runtime.Deps {
		// Each replica its own connections, as real ones have: a test can
		// close one replica's, so that nothing it still runs writes on.
		d := runtimetest.Deps(t, env.Conn(t), env.Mongo(t))
		ensureOtherStreams(t, ctx, d.JS)
		return d
	}
}

// sealingKeys opens on js the transcript keys a service started with the
// secret "secret" seals with: what a test publishes sealed, it reads.
func sealingKeys(t *testing.T, ctx context.Context, js jetstream.JetStream) *kvkeys.Keys {
	t.Helper()
	keys, err := kvkeys.Open(ctx, js, 1, "secret")
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// publishSealed seals data for workspace ws_a as the API's ingest seals it
// and publishes it as the platform event name, dated at; it answers the
// record's stream sequence.
func publishSealed(t *testing.T, ctx context.Context, js jetstream.JetStream, keys convseal.Keys, name string, at time.Time, data string) uint64 {
	t.Helper()
	sealed, err := convseal.SealData(ctx, keys, "ws_a", json.RawMessage(data))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"event": name, "timestamp": at.UTC().Format(time.RFC3339), "data": sealed})
	msg := nats.NewMsg("platform.evt.ws_a." + name)
	msg.Data = body
	ack, err := eventstore.Publish(ctx, js, msg)
	if err != nil {
		t.Fatal(err)
	}
	return ack.Sequence
}
