// Command gateway is the public HTTP listener: auth, rate limits, request
// ids and routing to the services over NATS. Run as many replicas as you
// like; they share rate-limit counters and key state through NATS.
package main

import (
	"context"
	"fmt"
	"net"

	"github.com/voiceai-platform/voiceai/pkg/config"
	"github.com/voiceai-platform/voiceai/pkg/runtime"
	"github.com/voiceai-platform/voiceai/services/gateway"
)

type cfg struct {
	config.NoStore // the gateway has no store
	gateway.Config
	// SecretKey seals the console's sessions (optional: without it the
	// console's sign-in is refused). The same on every replica.
	SecretKey string `env:"VOICEAI_SECRET_KEY"`
}

// Validate checks the secret, where one is set.
func (c cfg) Validate() error { return config.CheckSecret(c.SecretKey) }

func main() {
	runtime.Main("gateway", func(ctx context.Context, d runtime.Deps, c cfg) (func() error, error) {
		settings := c.Settings()
		settings.ConsoleSecret = c.SecretKey
		if c.SecretKey == "" {
			d.Logger.Warn("VOICEAI_SECRET_KEY is not set: the console's pages load but sign-in is refused")
		}
		gw, err := gateway.New(ctx, d, settings)
		if err != nil {
			return nil, err
		}
		ln, err := net.Listen("tcp", c.HTTPAddr)
		if err != nil {
			return nil, fmt.Errorf("VOICEAI_HTTP_ADDR %q: cannot listen there: %w", c.HTTPAddr, err)
		}
		d.Logger.Info("listening", "addr", ln.Addr().String())
		done := make(chan error, 1)
		go func() { done <- gw.Serve(ctx, ln) }()
		return func() error { return <-done }, nil
	})
}
