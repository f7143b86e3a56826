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
	config.Service
	tickets.SnapshotConfig
}

func main() {
	runtime.MainService(tickets.Name, func(ctx context.Context, d runtime.Deps, c cfg) (*tickets.Service, error) {
		return tickets.Start(ctx, d, tickets.Config{Secret: c.SecretKey, Snapshots: c.SnapshotConfig})
	})
}
