// Command allinone runs the whole platform in one process on embedded
// NATS and FerretDB: `make run`. `allinone workspace create` is the
// operator's command to add a tenant with its first admin key.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/voiceai-platform/voiceai/pkg/config"
	"github.com/voiceai-platform/voiceai/pkg/embedded/docstore"
	"github.com/voiceai-platform/voiceai/pkg/obs"
	"github.com/voiceai-platform/voiceai/pkg/runtime"
	"github.com/voiceai-platform/voiceai/pkg/tracing/otlp"
	"github.com/voiceai-platform/voiceai/services/allinone/stack"
	"github.com/voiceai-platform/voiceai/services/identity/operator"
)

func main() {
	root := &cobra.Command{
		Use:           "allinone",
		Short:         "Run the voice-agent quality platform in one process (embedded NATS and store)",
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE:          func(cmd *cobra.Command, _ []string) error { return serve(cmd.Context()) },
	}
	root.AddCommand(operator.WorkspaceCommand(natsURLOfRunningStack), storeCommand())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "allinone:", err)
		os.Exit(1)
	}
}

func serve(ctx context.Context) error {
	stack.TuneGC()
	c, err := config.Load[stack.Config]()
	if err != nil {
		return err
	}
	c.Store = docstore.Run // in this process
	level, err := config.ParseLogLevel(c.LogLevel)
	if err != nil {
		return err
	}
	log := obs.NewLogger(os.Stderr, level, "allinone")
	runtime.WarnUnknownVariables(log, os.Environ())
	stopTracing, err := otlp.Setup(ctx, "allinone", log)
	if err != nil {
		return fmt.Errorf("tracing (OTEL_* variables): %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = stopTracing(sctx)
	}()
	for first := true; ; first = false {
		err := serveOnce(ctx, c, log, first)
		if !errors.Is(err, runtime.ErrConnectionLost) || ctx.Err() != nil {
			return err
		}
		log.Warn("restarting the platform on new connections")
	}
}

// serveOnce runs the stack until it stops, with a metrics registry of its
// own so a restart registers every collector anew.
func serveOnce(parent context.Context, c stack.Config, log *slog.Logger, first bool) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	// The internal endpoint's address is bound first: one the process
	// cannot listen on stops it at start, rather than leaving it running
	// without /readyz. A restart binds it again once this run's server has
	// let it go.
	ln, err := obs.ListenMetrics(c.MetricsAddr)
	if err != nil {
		return err
	}
	// /healthz and /readyz answer while the stack starts: alive, not ready.
	reg := obs.NewRegistry()
	probes := obs.NewLater(obs.Probes{Ready: map[string]obs.Check{"started": obs.NotYet("starting")}})
	metricsDone := make(chan struct{})
	defer func() { cancel(); <-metricsDone }() // a restart binds the address again
	go func() {
		defer close(metricsDone)
		if err := obs.ServeMetricsOn(ctx, ln, reg, probes, log); err != nil {
			log.Error("metrics endpoint failed", "addr", c.MetricsAddr, "err", err)
		}
	}()
	s, err := stack.Start(ctx, c, log, reg)
	if err != nil {
		return err
	}
	probes.Set(s.Probes())
	if s.AdminKey != "" {
		fmt.Printf("\nAdmin API key (shown once, also written to %s):\n\n    %s\n\n", s.KeyFile, s.AdminKey)
	}
	if first {
		fmt.Printf("voiceai platform listening on http://%s  (data in %s, NATS at %s, its credentials in %s)\n", s.Addr, c.DataDir,
			config.Redacted(s.NATSURL), filepath.Join(c.DataDir, stack.NATSURLFile))
	}
	log.Info("ready", "addr", s.Addr, "data_dir", c.DataDir)
	return s.Wait()
}

// natsURLOfRunningStack lets the operator command reach the embedded NATS
// of a stack started with `make run` in the same data directory.
func natsURLOfRunningStack() (string, error) {
	if u := os.Getenv("VOICEAI_NATS_URL"); u != "" {
		return u, nil
	}
	dir := os.Getenv("VOICEAI_DATA_DIR")
	if dir == "" {
		dir = "./data"
	}
	b, err := os.ReadFile(dir + "/" + stack.NATSURLFile)
	if err != nil {
		return "", fmt.Errorf("no running stack found (%v); start it with `make run` or set VOICEAI_NATS_URL", err)
	}
	return string(trimNewline(b)), nil
}

func trimNewline(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
