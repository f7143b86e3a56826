package registrytest

import (
	"testing"

	"google.golang.org/protobuf/proto"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"
)

const ticketCreated, callEnded = "ticket_created", "call_ended"

// t0 is when the suites' webhooks are created (ms): events are matched at
// times around it, however long ago the changes were really stored.
const t0 = 1_800_000_000_000

func hook(ws, id string, createdMs int64, events ...string) *webhooksv1.Webhook {
	return &webhooksv1.Webhook{
		WebhookId: id, WorkspaceId: ws, Url: "https://receiver.example/" + id, Events: events, Active: true,
		CreatedAtUnixMs: createdMs, EnabledAtUnixMs: createdMs,
	}
}

// changed is w's next state (w itself is left as it was stored).
func changed(w *webhooksv1.Webhook, change func(*webhooksv1.Webhook)) *webhooksv1.Webhook {
	next := proto.CloneOf(w)
	change(next)
	return next
}

func deleted(w *webhooksv1.Webhook) *webhooksv1.Webhook {
	return changed(w, func(n *webhooksv1.Webhook) {
		at := int64(t0/1000 + 120)
		n.DeletedAtUnix = &at
	})
}

// getter is what both views answer a webhook by.
type getter interface {
	Get(workspaceID, id string) (*webhooksv1.Webhook, bool)
}

func wantGet(t *testing.T, g getter, want *webhooksv1.Webhook) {
	t.Helper()
	got, ok := g.Get(want.GetWorkspaceId(), want.GetWebhookId())
	if !ok || !proto.Equal(got, want) {
		t.Errorf("Get(%s, %s): %v %v, want %v", want.GetWorkspaceId(), want.GetWebhookId(), got, ok, want)
	}
}

func wantGone(t *testing.T, g getter, ws, id string) {
	t.Helper()
	if got, ok := g.Get(ws, id); ok {
		t.Errorf("Get(%s, %s): %v, want not found", ws, id, got)
	}
}
