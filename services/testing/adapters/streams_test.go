package adapters_test

import (
	"context"
	"testing"
	"time"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/services/testing/adapters"
)

// The testing service's retention holds whoever made TESTRUNS: a runner
// that made it first (with none) has it set, and 0 keeps runs for ever
// again.
func TestRunRetentionHoldsWhoeverMadeTheStream(t *testing.T) {
	js := jetStream(t) // as a runner ensures them: TESTRUNS without a MaxAge
	ctx := context.Background()
	maxAge := func() time.Duration {
		t.Helper()
		s, err := js.Stream(ctx, events.TestRunsStream)
		if err != nil {
			t.Fatal(err)
		}
		return s.CachedInfo().Config.MaxAge
	}
	for _, retention := range []time.Duration{48 * time.Hour, 48 * time.Hour, 0} {
		if err := adapters.EnsureRunRetention(ctx, js, 1, retention); err != nil {
			t.Fatal(err)
		}
		if got := maxAge(); got != retention {
			t.Fatalf("retention %s: TESTRUNS keeps runs %s", retention, got)
		}
		if err := adapters.EnsureStreams(ctx, js, 1); err != nil { // a runner starting again
			t.Fatal(err)
		}
		if got := maxAge(); got != retention {
			t.Fatalf("retention %s: after a runner ensured the streams, TESTRUNS keeps runs %s", retention, got)
		}
	}
}
