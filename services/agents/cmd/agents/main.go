// Command agents runs the agents service against external NATS and
// MongoDB (VOICEAI_NATS_URL, VOICEAI_MONGO_URI).
package main

import (
	"context"

	"github.com/voiceai-platform/voiceai/pkg/config"
	"github.com/voiceai-platform/voiceai/pkg/outbound"
	"github.com/voiceai-platform/voiceai/pkg/runtime"
	"github.com/voiceai-platform/voiceai/services/agents"
)

type cfg struct {
	config.Infra
	outbound.Env
	SecretKey string `env:"VOICEAI_SECRET_KEY,required,notEmpty"`
}

func main() {
	runtime.Main(agents.Name, func(ctx context.Context, d runtime.Deps, c cfg) (func() error, error) {
		s, err := agents.Start(ctx, d, agents.Config{Secret: c.SecretKey, AllowHosts: c.Hosts()})
		if err != nil {
			return nil, err
		}
		return s.Stop, nil
	})
}
