package eventstore

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

// A stream deleted and made again (a kept work stream, made again empty;
// a restore) numbers its records from 1 again. Its followers follow the
// new stream from its start: before, the client library's ordered
// consumer, reset, waited for records after the last one it had seen of
// the old stream, and the followers (the delivery log's, the webhooks'
// auto-disable) saw nothing new, with no error, for good.
func TestAFollowerFollowsAStreamMadeAnewFromItsStart(t *testing.T) {
	ctx := context.Background()
	js := testenv.JetStreamAt(t, testenv.StartNATS(t))
	cfg := jetstream.StreamConfig{Name: "ATTEMPTS", Subjects: []string{"attempts.>"}}
	if _, err := js.CreateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	publish := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if _, err := js.Publish(ctx, fmt.Sprintf("attempts.%d", i), []byte(fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	publish(0, 20)
	var mu sync.Mutex
	var seen []string
	f, err := Follow(t.Context(), js, "ATTEMPTS", nil, false, func(rec Record) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, string(rec.Data))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	has := func(data string) bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(seen, data)
	}
	testkit.Eventually(t, 10*time.Second, "the first stream's records applied", func() bool { return has("19") })

	if err := js.DeleteStream(ctx, "ATTEMPTS"); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	publish(100, 105)
	testkit.Eventually(t, 30*time.Second, "the new stream's records applied", func() bool { return has("104") })
	mu.Lock()
	defer mu.Unlock()
	if n := len(seen); n != 25 {
		t.Errorf("%d records applied; want the 20 of the first stream and the 5 of the new one, once each: %v", n, seen)
	}
}
