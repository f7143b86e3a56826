// Command tickets-qa-worker runs one QA worker replica against external
// NATS (VOICEAI_NATS_URL; it keeps no store): failed test runs,
// escalations and conversations that went badly become triage tickets,
// and tickets are clustered. Run as many replicas as the load needs; they
// share durable consumers, and a killed one loses nothing.
package main

import (
	"context"

	"github.com/voiceai-platform/voiceai/pkg/config"
	"github.com/voiceai-platform/voiceai/pkg/runtime"
	"github.com/voiceai-platform/voiceai/services/tickets"
)

type cfg struct {
	config.NoStore // it reads its own index of the TICKETS stream
	tickets.QAWorkerConfig
}

func main() {
	runtime.Main("tickets-qa-worker", func(ctx context.Context, d runtime.Deps, c cfg) (func() error, error) {
		a, err := tickets.NewWorkerApp(ctx, d)
		if err != nil {
			return nil, err
		}
		done, err := tickets.StartQAWorker(ctx, d, a, c.QAWorkerConfig)
		if err != nil {
			return nil, err
		}
		return func() error { <-done; return nil }, nil
	})
}
