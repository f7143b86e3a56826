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
	config.Service
	outbound.Env
}

func main() {
	runtime.MainService(agents.Name, func(ctx context.Context, d runtime.Deps, c cfg) (*agents.Service, error) {
		return agents.Start(ctx, d, agents.Config{Secret: c.SecretKey, AllowHosts: c.Hosts()})
	})
}
