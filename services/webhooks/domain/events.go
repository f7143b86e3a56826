// Package domain holds the webhook rules: which events exist, what a valid
// webhook and retry policy are, how retries are scheduled, how a delivery
// is signed, and which platform event payloads are well formed. It does
// no I/O.
package domain

import "slices"

// PlatformEvents are the public event names of spec 6.1, published by the
// voice runtime on the PLATFORM stream or through the ingestion endpoint.
var PlatformEvents = []string{
	"call_started", "call_ended", "call_transferred",
	"agent_available", "agent_busy", "agent_offline",
	"conversation_started", "conversation_ended", "escalation_triggered",
	"system_error", "maintenance_scheduled", "quota_exceeded",
}

// TicketEvents are the domain events of the tickets service that webhooks
// may subscribe to: the TICKETS event type without its "tickets." prefix.
// Their data is the whole ticket after the change.
var TicketEvents = []string{
	"ticket_created", "ticket_updated", "ticket_status_changed",
	"ticket_commented", "ticket_merged", "ticket_deleted",
}

// IsPlatformEvent reports whether name is a spec 6.1 event name.
func IsPlatformEvent(name string) bool { return slices.Contains(PlatformEvents, name) }

// IsKnownEvent reports whether a webhook may subscribe to name.
func IsKnownEvent(name string) bool {
	return IsPlatformEvent(name) || slices.Contains(TicketEvents, name)
}

// KnownEvents lists every subscribable event name.
func KnownEvents() []string {
	return append(slices.Clone(PlatformEvents), TicketEvents...)
}
