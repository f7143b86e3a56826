// Command webhooks runs the webhooks management and ingestion API against
// external NATS and MongoDB (VOICEAI_NATS_URL, VOICEAI_MONGO_URI). The
// deliveries are made by webhook-dispatcher replicas.
package main

import (
	"context"

	"github.com/voiceai-platform/voiceai/pkg/config"
	"github.com/voiceai-platform/voiceai/pkg/runtime"
	"github.com/voiceai-platform/voiceai/services/webhooks"
)

type cfg struct {
	config.Infra
	webhooks.Env
}

func main() {
	runtime.MainService(webhooks.Name, func(ctx context.Context, d runtime.Deps, c cfg) (*webhooks.Service, error) {
		return webhooks.Start(ctx, d, c.Config())
	})
}
