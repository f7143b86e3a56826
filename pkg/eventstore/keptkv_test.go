package eventstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

// A kept bucket deleted under its users is made again, empty, by the
// first of them whose operation finds it gone (Heal), and the others know
// it by their next check (Keep): Made moves on everywhere.
func TestAKeptBucketDeletedIsMadeAgainByItsUsers(t *testing.T) {
	url := testenv.StartNATS(t)
	ctx := context.Background()
	cfg := jetstream.KeyValueConfig{Bucket: "kept", History: 1}
	first, err := KeepKeyValue(ctx, testenv.JetStreamAt(t, url), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	other, err := KeepKeyValue(ctx, testenv.JetStreamAt(t, url), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Put(ctx, "before", []byte("1")); err != nil {
		t.Fatal(err)
	}
	madeBefore := first.Made()
	if madeBefore.IsZero() || !other.Made().Equal(madeBefore) {
		t.Fatalf("made %v and %v; want the bucket's making, the same for both", madeBefore, other.Made())
	}

	js := testenv.JetStreamAt(t, url)
	if err := js.DeleteKeyValue(ctx, "kept"); err != nil {
		t.Fatal(err)
	}
	_, err = first.Put(ctx, "after", []byte("2"))
	if err == nil {
		t.Fatal("a put in a deleted bucket")
	}
	first.Heal(err)
	testkit.Eventually(t, 5*time.Second, "a put after the bucket was made again", func() bool {
		_, err := first.Put(ctx, "after", []byte("2"))
		return err == nil
	})
	if _, err := first.Get(ctx, "before"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("a key of the deleted bucket: %v; want it gone with the bucket", err)
	}
	testkit.Eventually(t, 5*time.Second, "the healer knows the bucket was made again", func() bool { return first.Made().After(madeBefore) })
	keep, stop := context.WithCancel(ctx)
	defer stop()
	go other.Keep(keep, 20*time.Millisecond)
	testkit.Eventually(t, 5*time.Second, "the other knows the bucket was made again", func() bool { return other.Made().Equal(first.Made()) })
}

// Heal looks at nothing on a failure that is not the bucket's being
// gone, and makes nothing of one while the bucket is there.
func TestHealLeavesABucketThatIsThere(t *testing.T) {
	ctx := context.Background()
	kv, err := KeepKeyValue(ctx, testenv.JetStreamAt(t, testenv.StartNATS(t)), jetstream.KeyValueConfig{Bucket: "kept"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	made := kv.Made()
	_, err = kv.Get(ctx, "missing")
	if !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("get: %v", err)
	}
	kv.Heal(err)
	if kv.healer.running.Load() {
		t.Fatal("a missing key started a look")
	}
	kv.Heal(jetstream.ErrNoStreamResponse)
	testkit.Eventually(t, 5*time.Second, "the look done", func() bool { return !kv.healer.running.Load() })
	if !kv.Made().Equal(made) {
		t.Fatal("a bucket that is there was made again")
	}
}
