package app

import (
	"context"
	"encoding/json"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/ids"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// Ingest validates a platform event and publishes it on the PLATFORM
// stream at platform.evt.<workspace>.<event>, where the dispatcher (and
// the tickets service) consume it. The queue stores an event id once: a
// retry with the same idempotency key and event is stored once and
// answers the same id; the key sent with another event is refused (422
// idempotency_key_reused), as every keyed write's is.
func (a *App) Ingest(ctx context.Context, caller principal.Caller, in domain.IngestInput) (string, error) {
	workspaceID, idempotencyKey := caller.WorkspaceID, caller.CommandID
	env, err := domain.ParseIngest(in, a.Now())
	if err != nil {
		return "", err
	}
	eventID, digest := ids.New("evt"), ""
	if idempotencyKey != "" {
		eventID, digest = "evt_"+esproto.StableID("platform|"+workspaceID, idempotencyKey), esproto.RequestDigest(ctx)
	}
	// The workspace and event must make a subject the stream accepts.
	if _, err := events.PlatformSubject(workspaceID, env.Event); err != nil {
		return "", apperr.WorkspaceNotFound
	}
	// A transcript goes on the stream sealed under its conversation's
	// own key, so that deleting the conversation (the tickets service's
	// DELETE) makes every copy unreadable by destroying that key.
	if env.Event == "conversation_ended" && a.TranscriptKeys != nil {
		if env.Data, err = convseal.SealData(ctx, a.TranscriptKeys, workspaceID, env.Data); err != nil {
			return "", err
		}
	}
	body, err := json.Marshal(env)
	if err != nil {
		return "", err
	}
	if err := a.Queue.PublishEvent(ctx, PlatformEvent{ID: eventID, WorkspaceID: workspaceID, Event: env.Event, Body: body, Digest: digest}); err != nil {
		return "", err
	}
	return eventID, nil
}
