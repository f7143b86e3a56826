// Package adapters joins the webhooks service to NATS, JetStream and
// Mongo: the stream configurations, the in-memory webhook registry and
// delivery log fed by streams, the queue, sender and relay the use cases
// run on, and the Mongo read models.
package adapters

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/eventstore"
)

// AttemptsPerWebhook is how many attempt records of each webhook the
// WEBHOOK_ATTEMPTS stream keeps (older ones are in Mongo).
const AttemptsPerWebhook = 1000

// EnsureStreams creates or updates every stream the webhooks service
// uses: WEBHOOKS (its event store), PLATFORM (shared with producers),
// WEBHOOK_DELIVERIES (the work queue), WEBHOOK_ATTEMPTS and
// WEBHOOK_ATTEMPTS_LOG.
func EnsureStreams(ctx context.Context, js jetstream.JetStream, replicas int) error {
	if err := eventstore.EnsureEventStreams(ctx, js, replicas, events.WebhooksStream, events.PlatformStream); err != nil {
		return err
	}
	replicas = max(replicas, 1)
	for _, c := range []jetstream.StreamConfig{deliveriesConfig(replicas), attemptsConfig(replicas), attemptsLogConfig(replicas)} {
		if _, err := eventstore.EnsureConfig(ctx, js, c); err != nil {
			return fmt.Errorf("stream %s: %w", c.Name, err)
		}
	}
	return nil
}

// fileStream is what every stream of the service below shares: kept on
// file at replicas, with a ten-minute window in which a message id is
// stored once.
func fileStream(name, description, subject string, replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        name,
		Description: description,
		Subjects:    []string{subject},
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		Duplicates:  10 * time.Minute,
	}
}

// deliveriesConfig is WEBHOOK_DELIVERIES, the dispatchers' work queue,
// with the message schedules that put back the jobs waiting for their
// workspace's turn (StreamQueue.Defer). Schedules need roll-ups and old
// messages discarded at the stream's limits, of which it has none: what
// the discard policy says never comes to pass.
func deliveriesConfig(replicas int) jetstream.StreamConfig {
	c := fileStream(events.WebhookDeliveriesStream, "Webhook delivery jobs: one per event x webhook, removed when delivered or given up",
		events.WebhookDeliveriesAll, replicas)
	c.Subjects = append(c.Subjects, events.WebhookDeferredAll)
	c.Retention = jetstream.WorkQueuePolicy
	c.Discard = jetstream.DiscardOld
	c.AllowMsgSchedules, c.AllowRollup = true, true
	return c
}

// attemptsConfig is WEBHOOK_ATTEMPTS, the recent attempts every process
// follows.
func attemptsConfig(replicas int) jetstream.StreamConfig {
	c := fileStream(events.WebhookAttemptsStream, "Every webhook delivery attempt, newest per webhook", events.WebhookAttemptsAll, replicas)
	c.Retention = jetstream.LimitsPolicy
	c.Discard = jetstream.DiscardOld
	c.MaxMsgsPerSubject = AttemptsPerWebhook
	c.MaxAge = 30 * 24 * time.Hour
	c.AllowDirect = true
	return c
}

// attemptsLogConfig is WEBHOOK_ATTEMPTS_LOG, the queue the durable
// delivery log is copied from.
func attemptsLogConfig(replicas int) jetstream.StreamConfig {
	// Not sourced from WEBHOOK_ATTEMPTS any more: an update drops the
	// source (covers sees the subjects differ).
	c := fileStream(events.WebhookAttemptsLogStream, "Every webhook delivery attempt, until the durable delivery log holds it",
		events.WebhookAttemptsLogAll, replicas)
	c.Retention = jetstream.WorkQueuePolicy
	c.MaxAge = 30 * 24 * time.Hour
	return c
}

// followReplayed follows stream (eventstore.Follow) and returns once the
// replay of what it held is applied.
func followReplayed(ctx context.Context, js jetstream.JetStream, stream string, filters []string, lastPerSubject bool, apply func(eventstore.Record)) error {
	f, err := eventstore.Follow(ctx, js, stream, filters, lastPerSubject, apply)
	if err != nil {
		return err
	}
	return f.Wait(ctx)
}

// StreamBacklog counts a workspace's waiting deliveries from the
// WEBHOOK_DELIVERIES stream's subjects (one per webhook).
type StreamBacklog struct{ JS jetstream.JetStream }

// Waiting implements app.Backlog.
func (b StreamBacklog) Waiting(ctx context.Context, workspaceID string) (map[string]uint64, error) {
	// A workspace id that makes no subject token ("*", "a.b") would
	// widen the filter to other workspaces: it has no deliveries.
	if _, err := events.WebhookDeliverySubject(workspaceID, "whk_0"); err != nil {
		return map[string]uint64{}, nil
	}
	str, err := eventstore.StreamOf(ctx, b.JS, events.WebhookDeliveriesStream)
	if err != nil {
		return nil, err
	}
	// webhooks.delivery.<ws>.<webhook> and webhooks.deferred.<ws>.<webhook>.<job>
	info, err := str.Info(ctx, jetstream.WithSubjectFilter("webhooks.*."+workspaceID+".>"))
	if err != nil {
		return nil, err
	}
	out := make(map[string]uint64, len(info.State.Subjects))
	for subject, n := range info.State.Subjects {
		if tokens := strings.Split(subject, "."); len(tokens) >= 4 {
			out[tokens[3]] += n
		}
	}
	return out, nil
}

// Queued implements app.Backlog: every message of WEBHOOK_DELIVERIES.
func (b StreamBacklog) Queued(ctx context.Context) (uint64, error) {
	str, err := eventstore.StreamOf(ctx, b.JS, events.WebhookDeliveriesStream)
	if err != nil {
		return 0, err
	}
	info, err := str.Info(ctx)
	if err != nil {
		return 0, err
	}
	return info.State.Msgs, nil
}
