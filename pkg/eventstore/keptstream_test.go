package eventstore

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

// A kept work stream deleted under its users is made again, as it was
// configured, by the first whose operation finds it gone; a failure of
// another kind looks at nothing.
func TestAKeptStreamDeletedIsMadeAgain(t *testing.T) {
	ctx := context.Background()
	js := testenv.JetStreamAt(t, testenv.StartNATS(t))
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "FACTS", Subjects: []string{"facts.>"}}); err != nil {
		t.Fatal(err)
	}
	cfg := jetstream.StreamConfig{Name: "JOBS", Subjects: []string{"jobs.>"}, Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage}
	if _, err := js.CreateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	kept := &KeptStream{JS: js, Config: cfg, Sibling: "FACTS"}
	kept.Heal(jetstream.ErrKeyNotFound)
	if kept.healer.running.Load() {
		t.Fatal("a failure that is not the stream's being gone started a look")
	}
	if _, err := js.Publish(ctx, "jobs.1", nil); err != nil {
		t.Fatal(err)
	}

	if err := js.DeleteStream(ctx, "JOBS"); err != nil {
		t.Fatal(err)
	}
	_, err := js.Publish(ctx, "jobs.2", nil)
	if err == nil {
		t.Fatal("a job stored in a deleted stream")
	}
	kept.Heal(err)
	testkit.Eventually(t, 5*time.Second, "a publish after the stream was made again", func() bool {
		_, err := js.Publish(ctx, "jobs.3", nil)
		return err == nil
	})
	s, err := js.Stream(ctx, "JOBS")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.CachedInfo().Config; got.Retention != jetstream.WorkQueuePolicy || got.Subjects[0] != "jobs.>" || s.CachedInfo().State.Msgs != 1 {
		t.Fatalf("made again as %+v holding %d", got, s.CachedInfo().State.Msgs)
	}
	var none *KeptStream
	none.Heal(jetstream.ErrStreamNotFound) // keeps nothing, and does not fail
}
