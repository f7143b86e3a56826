// Command webhook-dispatcher delivers webhook events. It needs only NATS
// (VOICEAI_NATS_URL) and the deployment secret; run as many replicas as
// the load needs: they share the fan-out and delivery consumers.
package main

import (
	"context"
	"fmt"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/config"
	"github.com/voiceai-platform/voiceai/pkg/runtime"
	"github.com/voiceai-platform/voiceai/services/webhooks"
)

type cfg struct {
	config.NoStore // the dispatcher needs none
	webhooks.Env
	Workers int           `env:"VOICEAI_WEBHOOK_WORKERS" envDefault:"64"`
	AckWait time.Duration `env:"VOICEAI_WEBHOOK_ACK_WAIT" envDefault:"30s"`
}

// Validate checks the dispatcher's own settings (Load checks the embedded
// parts).
func (c cfg) Validate() error {
	if c.Workers < 1 || c.Workers > 4096 {
		return fmt.Errorf("VOICEAI_WEBHOOK_WORKERS %d: want 1..4096", c.Workers)
	}
	if c.AckWait <= c.AttemptTimeout {
		return fmt.Errorf("VOICEAI_WEBHOOK_ACK_WAIT %s must exceed VOICEAI_WEBHOOK_TIMEOUT %s", c.AckWait, c.AttemptTimeout)
	}
	return nil
}

func main() {
	runtime.Main("webhook-dispatcher", func(ctx context.Context, d runtime.Deps, c cfg) (func() error, error) {
		wc := c.Config()
		wc.Dispatcher.Workers, wc.Dispatcher.AckWait = c.Workers, c.AckWait // beside what the environment set
		ds, err := webhooks.StartDispatcher(ctx, d, wc, nil)
		if err != nil {
			return nil, err
		}
		return func() error { ds.Stop(); return nil }, nil
	})
}
