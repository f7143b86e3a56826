package app

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/ids"
	"github.com/voiceai-platform/voiceai/pkg/tracing"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// Ingest validates a platform event and publishes it on the PLATFORM
// stream at platform.evt.<workspace>.<event>, where the dispatcher (and
// the tickets service) consume it. The event id is the message's
// Nats-Msg-Id: a retry with the same idempotency key is stored once and
// answers the same id.
func (a *App) Ingest(ctx context.Context, workspaceID string, in domain.IngestInput, idempotencyKey string) (string, error) {
	env, err := domain.ParseIngest(in, a.now())
	if err != nil {
		return "", err
	}
	eventID := ids.New("evt")
	if idempotencyKey != "" {
		eventID = "evt_" + esproto.StableID("platform|"+workspaceID, idempotencyKey)
	}
	subject, err := events.PlatformSubject(workspaceID, env.Event)
	if err != nil {
		return "", apperr.WorkspaceNotFound
	}
	body, err := json.Marshal(env)
	if err != nil {
		return "", err
	}
	msg := nats.NewMsg(subject)
	msg.Data = body
	msg.Header.Set(events.HeaderEventID, eventID)
	msg.Header.Set(events.HeaderWorkspaceID, workspaceID)
	if tp := tracing.RequestTrace(ctx); tp != "" {
		msg.Header.Set(events.HeaderTraceparent, tp)
	}
	if _, err := eventstore.Publish(ctx, a.JS, msg, jetstream.WithMsgID(eventID), jetstream.WithExpectStream(events.PlatformStream)); err != nil {
		return "", fmt.Errorf("publish platform event: %w", err)
	}
	return eventID, nil
}
