// Command testing-runner is a runner worker: it pulls run jobs from the
// TESTJOBS work queue and executes them through the configured model
// (VOICEAI_LLM_PROVIDER offline|openai). Start as many as you like; they
// share the queue, and a killed worker's runs are redelivered to others.
package main

import (
	"context"

	"github.com/voiceai-platform/voiceai/pkg/config"
	"github.com/voiceai-platform/voiceai/pkg/runtime"
	testingsvc "github.com/voiceai-platform/voiceai/services/testing"
)

type cfg struct {
	config.NoStore // a runner reads and writes streams only
	testingsvc.RunnerConfig
}

func main() {
	runtime.Main("testing-runner", func(ctx context.Context, d runtime.Deps, c cfg) (func() error, error) {
		rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		done, err := testingsvc.StartRunner(rctx, d, c.RunnerConfig)
		if err != nil {
			cancel()
			return nil, err
		}
		go func() { <-ctx.Done(); cancel() }()
		return func() error { cancel(); <-done; return nil }, nil
	})
}
