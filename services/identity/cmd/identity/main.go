// Command identity runs the identity service (workspaces, service
// accounts, API keys) against external NATS and MongoDB. On start it
// bootstraps the default workspace's admin key; `identity workspace
// create` is the operator's client for adding workspaces.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/voiceai-platform/voiceai/pkg/config"
	"github.com/voiceai-platform/voiceai/pkg/runtime"
	"github.com/voiceai-platform/voiceai/services/identity"
	"github.com/voiceai-platform/voiceai/services/identity/operator"
)

type cfg struct {
	config.Infra
	identity.Config
	DataDir           string `env:"VOICEAI_DATA_DIR" envDefault:"./data"`
	BootstrapAdminKey string `env:"VOICEAI_BOOTSTRAP_ADMIN_KEY"`
}

func main() {
	if err := rootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "identity:", err)
		os.Exit(1)
	}
}

// rootCommand serves the identity service; its subcommands are the
// operator's workspace client and probe, which every service binary
// answers for container health checks (runtime.Run asks the running
// replica's /readyz when started so).
func rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use: "identity", Short: "Run the identity service", SilenceUsage: true, SilenceErrors: true,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return serve() },
	}
	root.AddCommand(operator.WorkspaceCommand(func() (string, error) {
		c, err := config.Load[cfg]()
		return c.NATSURL, err
	}), &cobra.Command{
		Use: runtime.ProbeCommand, Short: "Ask the running replica's /readyz (exit 0 when ready)", Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return serve() },
	})
	return root
}

func serve() error {
	return runtime.LoadAndRun(identity.Name, func(ctx context.Context, d runtime.Deps, c cfg) (func() error, error) {
		s, err := identity.Start(ctx, d, c.Config)
		if err != nil {
			return nil, err
		}
		boot, err := s.App.Bootstrap(ctx, c.BootstrapAdminKey, c.DataDir)
		if err != nil {
			_ = s.Stop()
			return nil, fmt.Errorf("bootstrap: %w", err)
		}
		if boot.GeneratedSecret != "" {
			fmt.Printf("\nAdmin API key (shown once, also written to %s):\n\n    %s\n\n", boot.KeyFile, boot.GeneratedSecret)
		}
		return s.Stop, nil
	})
}
