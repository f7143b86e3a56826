package app

import (
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// publicOf is the public change an event of our own carries, so that
// subscribers (webhooks) deliver it as the public event it amounts to
// without knowing the tickets service's rules.
func publicOf(c domain.PublicChange) *ticketsv1.PublicChange {
	return &ticketsv1.PublicChange{Event: c.Event, PreviousStatus: c.PreviousStatus, ChangedFields: c.ChangedFields}
}
