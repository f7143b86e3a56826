package adapters_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/testing/adapters"
)

// The model cache keeps an answer by key in the runners' shared bucket;
// a key never put is a miss; the bucket deleted is made again.
func TestModelCacheKeepsAnswersByKey(t *testing.T) {
	js := testenv.JetStreamAt(t, testenv.StartNATS(t))
	ctx := context.Background()
	c, err := adapters.OpenKVCache(ctx, js, time.Hour, 1, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get(ctx, "k1"); ok {
		t.Fatal("a key never put was found")
	}
	c.Put(ctx, "k1", []byte("answer"))
	// Another runner opening the bucket reads what the first one put.
	other, err := adapters.OpenKVCache(ctx, js, time.Hour, 1, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := other.Get(ctx, "k1"); !ok || string(v) != "answer" {
		t.Fatalf("got %q %v", v, ok)
	}

	// Deleted under the runners, the bucket is made again by the first
	// that finds it gone: a miss, then the cache works again.
	if err := js.DeleteKeyValue(ctx, adapters.ModelCacheBucket); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get(ctx, "k1"); ok {
		t.Fatal("an answer of the deleted bucket was found")
	}
	testkit.Eventually(t, 5*time.Second, "the cache working again", func() bool {
		other.Put(ctx, "k2", []byte("again"))
		v, ok := c.Get(ctx, "k2")
		return ok && string(v) == "again"
	})
}
