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
	keep, stop := context.WithCancel(ctx)
	defer stop()
	go other.Keep(keep, 20*time.Millisecond)
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
		// The other's check came first: it made the bucket again.
		testkit.Eventually(t, 5*time.Second, "the bucket made again", func() bool { return other.Made().After(madeBefore) })
	} else if !first.Heal(ctx, err) && first.Made().Equal(madeBefore) {
		t.Fatalf("an operation failed with %v on the deleted bucket, and Heal made nothing", err)
	}
	if _, err := first.Put(ctx, "after", []byte("2")); err != nil {
		t.Fatalf("put after healing: %v", err)
	}
	if _, err := first.Get(ctx, "before"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("a key of the deleted bucket: %v; want it gone with the bucket", err)
	}
	testkit.Eventually(t, 5*time.Second, "both know the bucket was made again", func() bool {
		first.Check(ctx)
		return first.Made().After(madeBefore) && other.Made().Equal(first.Made())
	})
}

// Heal makes nothing of a failure that is not the bucket's being gone.
func TestHealIgnoresOtherFailures(t *testing.T) {
	ctx := context.Background()
	kv, err := KeepKeyValue(ctx, testenv.JetStreamAt(t, testenv.StartNATS(t)), jetstream.KeyValueConfig{Bucket: "kept"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = kv.Get(ctx, "missing")
	if !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("get: %v", err)
	}
	if kv.Heal(ctx, err) {
		t.Fatal("a missing key made the bucket again")
	}
}
