// Command tickets runs the triage-tickets service against external NATS and
// MongoDB (VOICEAI_NATS_URL, VOICEAI_MONGO_URI).
package main

import (
	"context"

	"github.com/voiceai-platform/voiceai/pkg/config"
	"github.com/voiceai-platform/voiceai/pkg/runtime"
	"github.com/voiceai-platform/voiceai/services/tickets"
)

type cfg struct {
	config.Infra
	SecretKey string `env:"VOICEAI_SECRET_KEY,required,notEmpty"`
}

func main() {
	runtime.Main(tickets.Name, func(ctx context.Context, d runtime.Deps, c cfg) (func() error, error) {
		s, err := tickets.Start(ctx, d, c.SecretKey)
		if err != nil {
			return nil, err
		}
		return s.Stop, nil
	})
}
