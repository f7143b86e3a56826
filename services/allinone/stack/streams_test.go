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
// ensures them again. Doing all of it twice must update no stream: an
// update races in the server with consumers being created.
func TestEnsuringEveryStreamAgainUpdatesNothing(t *testing.T) {
	t.Parallel()
	var names []string
	for _, s := range events.Streams() {
		names = append(names, s.Name)
	}
	testenv.EnsuringAgainUpdatesNothing(t, func(ctx context.Context, js jetstream.JetStream) error {
		return errors.Join(
			eventstore.EnsureEventStreams(ctx, js, 1, names...),
			testingadapters.EnsureStreams(ctx, js, 1),
			testingadapters.EnsureRunRetention(ctx, js, 2160*time.Hour),
			webhooksadapters.EnsureStreams(ctx, js, 1),
		)
	})
}
