// Command testing runs the testing service (tests, folders, invocations)
// against external NATS and MongoDB (VOICEAI_NATS_URL, VOICEAI_MONGO_URI).
// Runs are executed by testing-runner workers.
package main

import (
	"context"

	"github.com/voiceai-platform/voiceai/pkg/config"
	"github.com/voiceai-platform/voiceai/pkg/outbound"
	"github.com/voiceai-platform/voiceai/pkg/runtime"
	testingsvc "github.com/voiceai-platform/voiceai/services/testing"
)

type cfg struct {
	config.Service
	testingsvc.Limits
	outbound.Env
}

func main() {
	runtime.MainService(testingsvc.Name, func(ctx context.Context, d runtime.Deps, c cfg) (*testingsvc.Service, error) {
		return testingsvc.Start(ctx, d, testingsvc.Config{Secret: c.SecretKey, Limits: c.Limits, AllowHosts: c.Hosts()})
	})
}
