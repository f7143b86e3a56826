package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

// EnsuringAgainUpdatesNothing runs ensure (a service's stream setup, which
// every process runs when it starts) on a fresh server, then again, and
// fails the test if either time updated a stream: an update races in the
// server with consumers being created, and on a fresh deployment others
// create them on a stream as soon as it exists.
func EnsuringAgainUpdatesNothing(t *testing.T, ensure func(context.Context, jetstream.JetStream) error) {
	t.Helper()
	nc, err := nats.Connect(StartNATS(t))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	updates, err := nc.SubscribeSync("$JS.EVENT.ADVISORY.STREAM.UPDATED.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := ensure(ctx, js); err != nil {
			t.Fatal(err)
		}
	}
	// The server sends advisories in order: the first must be the
	// marker's, updated after both.
	marker := jetstream.StreamConfig{Name: "ENSURE_MARKER", Subjects: []string{"ensure.marker"}}
	if _, err := js.CreateStream(ctx, marker); err != nil {
		t.Fatal(err)
	}
	marker.Description = "updated"
	if _, err := js.UpdateStream(ctx, marker); err != nil {
		t.Fatal(err)
	}
	m, err := updates.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if m.Subject != "$JS.EVENT.ADVISORY.STREAM.UPDATED.ENSURE_MARKER" {
		t.Fatalf("ensuring the streams sent an update: %s", m.Subject)
	}
}

// RemakeStream deletes the stream and makes it again with create (a restore,
// a stream of passing work made anew). The server removes a deleted file
// stream's directory in the background, and a create at once can fail
// ("error creating store for stream") while it does: the create is asked
// again, as an operator's restore would be, for up to 10 seconds.
func RemakeStream(t testing.TB, js jetstream.JetStream, name string, create func(context.Context) error) {
	t.Helper()
	ctx := context.Background()
	if err := js.DeleteStream(ctx, name); err != nil {
		t.Fatalf("delete stream %s: %v", name, err)
	}
	var last error
	defer func() {
		if t.Failed() && last != nil {
			t.Logf("make stream %s again: %v", name, last)
		}
	}()
	testkit.Eventually(t, 10*time.Second, "stream "+name+" made again", func() bool {
		last = create(ctx)
		return last == nil
	})
}
