package runtime

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/config"
	"github.com/voiceai-platform/voiceai/pkg/obs"
)

// StartFunc starts a service on d and returns how to stop it.
type StartFunc func(ctx context.Context, d Deps) (stop func() error, err error)

// Run is a standalone service's whole life: connect, start, serve metrics,
// wait for SIGINT/SIGTERM, then stop the service and drain connections.
func Run(name string, infra config.Infra, start StartFunc) error {
	level, err := config.ParseLogLevel(infra.LogLevel)
	if err != nil {
		return err
	}
	log := obs.NewLogger(os.Stderr, level, name)
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	nc, mc, err := Connect(ctx, name, infra.NATSURL, infra.MongoURI, log)
	if err != nil {
		return err
	}
	reg := obs.NewRegistry()
	d, err := NewDeps(nc, mc, log, reg, infra.StreamReplicas)
	if err != nil {
		return err
	}
	go func() {
		if err := obs.ServeMetrics(ctx, infra.MetricsAddr, reg); err != nil {
			log.Error("metrics endpoint failed", "addr", infra.MetricsAddr, "err", err)
		}
	}()
	stop, err := start(ctx, d)
	if err != nil {
		return err
	}
	log.Info("started", "nats", infra.NATSURL)
	<-ctx.Done()
	log.Info("stopping")
	if err := stop(); err != nil {
		log.Warn("stop", "err", err)
	}
	_ = nc.Drain()
	if mc == nil {
		return nil
	}
	dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer dcancel()
	return mc.Disconnect(dctx)
}
