// Command testing runs the testing service (tests, folders, invocations)
// against external NATS and MongoDB (VOICEAI_NATS_URL, VOICEAI_MONGO_URI).
// Runs are executed by testing-runner workers.
package main

import (
	"context"

	"github.com/voiceai-platform/voiceai/pkg/config"
	"github.com/voiceai-platform/voiceai/pkg/runtime"
	testingsvc "github.com/voiceai-platform/voiceai/services/testing"
)

type cfg struct {
	config.Infra
	SecretKey string `env:"VOICEAI_SECRET_KEY,required,notEmpty"`
}

func main() {
	runtime.Main(testingsvc.Name, func(ctx context.Context, d runtime.Deps, c cfg) (func() error, error) {
		s, err := testingsvc.Start(ctx, d, c.SecretKey)
		if err != nil {
			return nil, err
		}
		return s.Stop, nil
	})
}
