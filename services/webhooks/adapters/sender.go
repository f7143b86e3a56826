package adapters

import (
	"context"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/services/webhooks/delivery"
)

// Sender is app.Sender: HTTP through the guarded sender, and relay
// webhooks through the relay on NATS.
type Sender struct {
	HTTP  *delivery.Sender
	Relay Relay // its Timeout is set from HTTP's by NewSender
}

// NewSender sends over s, and relays over rl with s's attempt time-out.
func NewSender(s *delivery.Sender, rl Relay) Sender {
	rl.Timeout = s.Timeout()
	return Sender{HTTP: s, Relay: rl}
}

// Send makes one attempt of r to w.
func (s Sender) Send(ctx context.Context, w *webhooksv1.Webhook, r delivery.Request) delivery.Result {
	if w.GetRelay() {
		return s.Relay.Send(ctx, w.GetWorkspaceId(), r)
	}
	return s.HTTP.Send(ctx, r)
}

// HostAllowed reports whether the outbound guard lets a webhook point at
// host.
func (s Sender) HostAllowed(host string) bool { return s.HTTP.Guard().HostAllowed(host) }
