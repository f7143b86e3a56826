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

func (c cfg) Validate() error {
	if err := c.Env.Validate(); err != nil {
		return err
	}
	return c.Infra.Validate()
}

func main() {
	runtime.Main(webhooks.Name, func(ctx context.Context, d runtime.Deps, c cfg) (func() error, error) {
		s, err := webhooks.Start(ctx, d, c.Config())
		if err != nil {
			return nil, err
		}
		return s.Stop, nil
	})
}
