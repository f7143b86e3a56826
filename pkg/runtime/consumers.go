package runtime

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/voiceai-platform/voiceai/pkg/consume"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/projection"
	"github.com/voiceai-platform/voiceai/pkg/tick"
)

// StartProjection runs a projection of stream c.Stream into coll for the
// life of ctx, as every service's projections run: with the process's
// logger, holding while the disk is nearly full (WritesHeld), its lag
// exported, once its stream exists (another service may make it later),
// and started again should it stop. What c says of those is replaced, so
// no projection can forget to hold.
func (d Deps) StartProjection(ctx context.Context, coll *mongo.Collection, c projection.Config, h projection.Handler) {
	d.startProjection(ctx, c, func(ctx context.Context, c projection.Config) error {
		return projection.Run(ctx, d.JS, coll, c, h)
	})
}

// StartApplying is StartProjection for a projection whose records apply
// writes (projection.RunApply).
func (d Deps) StartApplying(ctx context.Context, coll *mongo.Collection, c projection.Config, apply projection.Apply) {
	d.startProjection(ctx, c, func(ctx context.Context, c projection.Config) error {
		return projection.RunApply(ctx, d.JS, coll, c, apply)
	})
}

func (d Deps) startProjection(ctx context.Context, c projection.Config, run func(context.Context, projection.Config) error) {
	d.WatchConsumer(c.Stream, c.Durable)
	c.Logger, c.Hold = d.Logger, d.WritesHeld
	go func() {
		if _, err := eventstore.WaitForStream(ctx, d.JS, c.Stream); err != nil {
			if ctx.Err() == nil {
				d.Logger.Error("projector not started", "projection", c.Durable, "err", err)
			}
			return
		}
		tick.Restarting.Restart(ctx, func(ctx context.Context) error { return run(ctx, c) }, func(err error, again time.Duration) {
			d.Logger.Error("projector stopped; starting it again", "projection", c.Durable, "err", err, "after", again)
		})
	}()
}

// Consumer is s as every service's consumers that write run: with the
// process's logger, holding while the disk is nearly full, its lag
// exported.
func (d Deps) Consumer(s consume.Spec) consume.Spec {
	d.WatchConsumer(s.Stream, s.Durable)
	s.Log, s.Hold = d.Logger, d.WritesHeld
	return s
}
