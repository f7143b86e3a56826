package runtime

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/voiceai-platform/voiceai/pkg/consume"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/projection"
)

// StartProjection runs a projection of stream c.Stream into coll for the
// life of ctx, as every service's projections run: with the process's
// logger, holding while the disk is nearly full (WritesHeld), its lag
// exported, and once its stream exists (another service may make it
// later). What c says of those is replaced, so no projection can forget
// to hold.
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
		if err := run(ctx, c); err != nil && ctx.Err() == nil {
			d.Logger.Error("projector stopped", "projection", c.Durable, "err", err)
		}
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
