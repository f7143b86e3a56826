package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/voiceai-platform/voiceai/pkg/config"
	"github.com/voiceai-platform/voiceai/pkg/obs"
	"github.com/voiceai-platform/voiceai/pkg/tracing/otlp"
)

// StartFunc starts a service on d and returns how to stop it. ctx ends
// when the service must stop (shutdown, or its connection was lost).
type StartFunc func(ctx context.Context, d Deps) (stop func() error, err error)

// Configured is a binary's configuration: config.Infra embedded, plus
// its own variables. A binary that keeps no store overrides Infrastructure
// to clear MongoURI.
type Configured interface {
	Infrastructure() config.Infra
}

// Main is a service binary's main: its configuration loaded from the
// environment (config.Load, which validates it), the service run under
// name (Run), and on failure the error on stderr and exit status 1.
func Main[C Configured](name string, start func(ctx context.Context, d Deps, c C) (stop func() error, err error)) {
	if code, done := usage[C](name, os.Args[1:], os.Stdout, os.Stderr); done {
		os.Exit(code)
	}
	if err := LoadAndRun(name, start); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

// MainService is Main for a binary that runs one service until its Stop.
func MainService[C Configured, A any](name string, start func(ctx context.Context, d Deps, c C) (*Service[A], error)) {
	Main(name, func(ctx context.Context, d Deps, c C) (func() error, error) {
		s, err := start(ctx, d, c)
		if err != nil {
			return nil, err
		}
		return s.Stop, nil
	})
}

// LoadAndRun is Main without the exit, for a binary with other commands.
func LoadAndRun[C Configured](name string, start func(ctx context.Context, d Deps, c C) (stop func() error, err error)) error {
	c, err := config.Load[C]()
	if err != nil {
		return err
	}
	return Run(name, c.Infrastructure(), func(ctx context.Context, d Deps) (func() error, error) { return start(ctx, d, c) })
}

// Run is a standalone service's whole life: connect, start, serve metrics
// and probes, wait for SIGINT/SIGTERM, then stop the service and drain
// connections. A connection lost for good (ErrConnectionLost) does not
// end the process: the service is stopped and started again on new
// connections. Started as `<binary> probe`, it only asks the running
// replica's /readyz (see Probe).
func Run(name string, infra config.Infra, start StartFunc) error {
	if probeRequested() {
		return Probe(context.Background(), infra.MetricsAddr)
	}
	level, err := config.ParseLogLevel(infra.LogLevel)
	if err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	log := obs.NewLogger(os.Stderr, level, name)
	WarnUnknownVariables(log, os.Environ())
	stopTracing, err := otlp.Setup(ctx, name, log)
	if err != nil {
		return fmt.Errorf("tracing (OTEL_* variables): %w", err)
	}
	defer flushTraces(stopTracing, log)
	return RunContext(ctx, name, infra, start, log)
}

// RunContext is Run until ctx ends.
func RunContext(ctx context.Context, name string, infra config.Infra, start StartFunc, log *slog.Logger) error {
	for {
		err := runOnce(ctx, name, infra, start, log)
		if !errors.Is(err, ErrConnectionLost) || ctx.Err() != nil {
			return err
		}
		log.Warn("restarting the service on new connections")
	}
}

// runOnce runs the service on one set of connections (and a registry of
// its own, so a restart registers its collectors anew).
func runOnce(parent context.Context, name string, infra config.Infra, start StartFunc, log *slog.Logger) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	// The internal endpoint's address is bound before anything else: one
	// the process cannot listen on stops it here, rather than leaving it
	// running without /readyz. A restart binds it again once this run's
	// server has let it go.
	ln, err := obs.ListenMetrics(infra.MetricsAddr)
	if err != nil {
		return err
	}
	// /healthz and /readyz answer from now on: while the first connection
	// is still being retried, the process is alive and not ready
	// ("connecting"), so an orchestrator neither restarts it nor sends it
	// traffic, and an operator can see why.
	reg := obs.NewRegistry()
	dialling := obs.Probes{Ready: map[string]obs.Check{"nats": obs.NotYet("connecting"), "started": obs.NotYet("starting")}}
	if infra.MongoURI != "" {
		dialling.Ready["store"] = obs.NotYet("connecting")
	}
	probes := obs.NewLater(dialling)
	metricsDone := make(chan struct{})
	go func() {
		defer close(metricsDone)
		if err := obs.ServeMetricsOn(ctx, ln, reg, probes, log); err != nil {
			log.Error("metrics endpoint failed", "addr", infra.MetricsAddr, "err", err)
		}
	}()
	defer func() {
		cancel()
		<-metricsDone // a restart binds the address again
	}()
	var natsOpts []nats.Option
	if infra.NATSPreferFirst {
		natsOpts = append(natsOpts, nats.DontRandomize())
	}
	link, mc, err := Connect(ctx, name, infra.NATSURL, infra.MongoURI, log, reg, natsOpts...)
	if err != nil {
		return err
	}
	d, err := NewDeps(link.NC, mc, log, reg, infra.StreamReplicas)
	if err != nil {
		link.Close()
		return err
	}
	d.Link, d.ReadIndex = link, infra.ReadIndex
	// Not ready until the service has started: on a fresh cluster it waits
	// for its streams to have leaders, and serves nothing meanwhile.
	connected := d.Probes()
	connected.Ready["started"] = obs.NotYet("starting")
	probes.Set(connected)
	stop, err := start(ctx, d)
	if err != nil {
		link.Close()
		return err
	}
	running := d.Probes()
	running.Ready["started"] = func(context.Context) error { return nil }
	probes.Set(running)
	log.Info("started", "nats", config.Redacted(infra.NATSURL))
	lost := false
	select {
	case <-ctx.Done():
		log.Info("stopping")
	case <-link.Lost():
		lost = true
	}
	cancel()
	if err := stop(); err != nil {
		log.Warn("stop", "err", err)
	}
	link.Close()
	if mc != nil {
		dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer dcancel()
		_ = mc.Disconnect(dctx)
	}
	if lost {
		return ErrConnectionLost
	}
	return nil
}

// flushTraces exports the spans still buffered, within a few seconds.
func flushTraces(stop func(context.Context) error, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := stop(ctx); err != nil {
		log.Warn("traces not all exported", "err", err)
	}
}

// WarnUnknownVariables logs a warning for each VOICEAI_* variable of
// environ that no binary reads (config.Unknown): a misspelt setting
// otherwise does nothing, silently.
func WarnUnknownVariables(log *slog.Logger, environ []string) {
	for _, u := range config.Unknown(environ) {
		if u.Suggestion != "" {
			log.Warn("a VOICEAI_ variable no binary reads is set: it does nothing; did you mean "+u.Suggestion+"?", "variable", u.Name)
		} else {
			log.Warn("a VOICEAI_ variable no binary reads is set: it does nothing", "variable", u.Name)
		}
	}
}

// usage answers a service binary's arguments other than none (run) and
// probe: --help (or -h, help) prints what the binary is and the variables
// it reads; anything else is refused (exit 2), rather than starting a
// replica that would bind its ports and take work. done says the process
// must exit with code.
func usage[C Configured](name string, args []string, stdout, stderr io.Writer) (code int, done bool) {
	if len(args) == 0 || (len(args) == 1 && args[0] == ProbeCommand) {
		return 0, false
	}
	w, code := stdout, 0
	if a := args[0]; len(args) > 1 || (a != "-h" && a != "--help" && a != "help") {
		w, code = stderr, 2
		fmt.Fprintf(w, "%s: unknown argument %q\n\n", name, strings.Join(args, " "))
	}
	fmt.Fprintf(w, `Usage: %[1]s          run the %[1]s service until SIGINT or SIGTERM
       %[1]s probe    ask the running replica's /readyz (exit 0 when ready)

It is configured by environment variables alone (see the README's configuration table):
  %[2]s
`, name, strings.Join(config.VariablesOf[C](), "\n  "))
	return code, true
}
