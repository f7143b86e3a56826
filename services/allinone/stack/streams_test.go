package stack

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	testingadapters "github.com/voiceai-platform/voiceai/services/testing/adapters"
	webhooksadapters "github.com/voiceai-platform/voiceai/services/webhooks/adapters"
)

// Every process ensures its streams when it starts, several ensure the
// same ones (PLATFORM: agents, tickets and webhooks), and every restart
// ensures them again. Neither the first start nor the next may update a
// stream: an update races in the server with consumers being created.
// The testing service sets TESTRUNS's retention before anything else
// makes TESTRUNS, as it starts before the runners.
func TestEnsuringEveryStreamAgainUpdatesNothing(t *testing.T) {
	t.Parallel()
	var names []string
	for _, s := range events.Streams() {
		names = append(names, s.Name)
	}
	testenv.EnsuringAgainUpdatesNothing(t, func(ctx context.Context, js jetstream.JetStream) error {
		return errors.Join(
			testingadapters.EnsureRunRetention(ctx, js, 1, 2160*time.Hour),
			eventstore.EnsureEventStreams(ctx, js, 1, names...),
			testingadapters.EnsureStreams(ctx, js, 1),
			webhooksadapters.EnsureStreams(ctx, js, 1),
		)
	})
}
