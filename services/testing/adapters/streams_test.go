package adapters

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
)

func TestEnsureStreamsTwiceUpdatesNothing(t *testing.T) {
	testenv.EnsuringAgainUpdatesNothing(t, func(ctx context.Context, js jetstream.JetStream) error { return EnsureStreams(ctx, js, 1) })
}
