// Command webhooks runs the webhooks management and ingestion API against
// external NATS and MongoDB (VOICEAI_NATS_URL, VOICEAI_MONGO_URI). The
// deliveries are made by webhook-dispatcher replicas.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/config"
	"github.com/voiceai-platform/voiceai/pkg/runtime"
	"github.com/voiceai-platform/voiceai/services/webhooks"
	"github.com/voiceai-platform/voiceai/services/webhooks/delivery"
)

type cfg struct {
	config.Infra
	SecretKey      string        `env:"VOICEAI_SECRET_KEY,required,notEmpty"`
	AllowHosts     string        `env:"VOICEAI_WEBHOOK_ALLOW_HOSTS"`
	AttemptTimeout time.Duration `env:"VOICEAI_WEBHOOK_TIMEOUT" envDefault:"10s"`
}

func (c cfg) Validate() error {
	if c.AttemptTimeout < time.Second || c.AttemptTimeout > time.Minute {
		return fmt.Errorf("VOICEAI_WEBHOOK_TIMEOUT %s: want 1s..1m", c.AttemptTimeout)
	}
	return c.Infra.Validate()
}

func main() {
	c, err := config.Load[cfg]()
	if err == nil {
		err = runtime.Run(webhooks.Name, c.Infra, func(ctx context.Context, d runtime.Deps) (func() error, error) {
			s, err := webhooks.Start(ctx, d, webhooks.Config{
				Secret: c.SecretKey, AllowHosts: delivery.ParseAllowHosts(c.AllowHosts), AttemptTimeout: c.AttemptTimeout,
			})
			if err != nil {
				return nil, err
			}
			return s.Stop, nil
		})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "webhooks:", err)
		os.Exit(1)
	}
}
