package eventstore

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
)

// A kept work stream deleted under its users is made again, as it was
// configured and with its sibling's replication, by the first whose
// operation finds it gone; nothing else makes it again.
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
	if kept.Heal(ctx, jetstream.ErrKeyNotFound) {
		t.Fatal("made again on a failure that is not the stream's being gone")
	}
	if _, err := js.Publish(ctx, "jobs.1", nil); err != nil {
		t.Fatal(err)
	}
	if kept.Heal(ctx, jetstream.ErrNoStreamResponse) {
		t.Fatal("made again while it is there")
	}

	if err := js.DeleteStream(ctx, "JOBS"); err != nil {
		t.Fatal(err)
	}
	_, err := js.Publish(ctx, "jobs.2", nil)
	if err == nil {
		t.Fatal("a job stored in a deleted stream")
	}
	if !kept.Heal(ctx, err) {
		t.Fatalf("a publish failed with %v on the deleted stream, and Heal made nothing", err)
	}
	if _, err := js.Publish(ctx, "jobs.3", nil); err != nil {
		t.Fatalf("publish after healing: %v", err)
	}
	s, err := js.Stream(ctx, "JOBS")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.CachedInfo().Config; got.Retention != jetstream.WorkQueuePolicy || got.Subjects[0] != "jobs.>" || s.CachedInfo().State.Msgs != 1 {
		t.Fatalf("made again as %+v holding %d", got, s.CachedInfo().State.Msgs)
	}
	var none *KeptStream
	if none.Heal(ctx, jetstream.ErrStreamNotFound) {
		t.Fatal("a nil KeptStream made something")
	}
}
