// Package domain holds the webhook rules: which events exist, what a valid
// webhook and retry policy are (beyond the bounds the API schema says),
// how retries are scheduled, how a delivery is signed, and how an
// ingested platform event becomes an envelope. It does no I/O.
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
// may subscribe to: the TICKETS event type without its "tickets." prefix,
// whoever made the change (the QA worker's own event types are delivered
// as the change they amount to). Their data is the whole ticket after the
// change.
var TicketEvents = []string{
	"ticket_created", "ticket_updated", "ticket_status_changed",
	"ticket_commented", "ticket_merged", "ticket_deleted",
}

// InvocationEvents are the test invocation outcomes webhooks may
// subscribe to, so CI can wait for a run's result without polling: the
// TESTING events invocation_completed and invocation_cancelled. Their
// data is the invocation's summary (InvocationData).
var InvocationEvents = []string{"test_invocation_completed", "test_invocation_cancelled"}

// InvocationData is the data of an invocation event.
type InvocationData struct {
	InvocationID        string `json:"invocation_id"`
	AgentID             string `json:"agent_id"`
	AgentName           string `json:"agent_name"`
	BranchID            string `json:"branch_id"`
	FolderID            string `json:"folder_id"`
	Title               string `json:"title"`
	Status              string `json:"status"`
	RepeatCount         int32  `json:"repeat_count"`
	TestRunCount        int64  `json:"test_run_count"`
	PassedCount         int64  `json:"passed_count"`
	FailedCount         int64  `json:"failed_count"`
	RanByUserEmail      string `json:"ran_by_user_email"`
	CreatedAtUnixSecs   int64  `json:"created_at_unix_secs"`
	CompletedAtUnixSecs *int64 `json:"completed_at_unix_secs"`
	CancelledAtUnixSecs *int64 `json:"cancelled_at_unix_secs"`
}

// IsPlatformEvent reports whether name is a spec 6.1 event name.
func IsPlatformEvent(name string) bool { return slices.Contains(PlatformEvents, name) }

// IsTicketEvent reports whether name is a ticket event's public name.
func IsTicketEvent(name string) bool { return slices.Contains(TicketEvents, name) }

// IsKnownEvent reports whether a webhook may subscribe to name.
func IsKnownEvent(name string) bool {
	return IsPlatformEvent(name) || IsTicketEvent(name) || slices.Contains(InvocationEvents, name)
}

// KnownEvents lists every subscribable event name.
func KnownEvents() []string {
	return slices.Concat(PlatformEvents, TicketEvents, InvocationEvents)
}

// EventInfo describes a subscribable event for the event catalog.
type EventInfo struct {
	Name        string
	Group       string
	Description string
	// DataSchema names the schema of its data in the API's OpenAPI
	// document ("" where the event's data is free-form).
	DataSchema string
}

// Catalog is every subscribable event, described.
var Catalog = []EventInfo{
	{"call_started", "call", "A call reached an agent.", "CallStartedData"},
	{"call_ended", "call", "A call ended, with its outcome.", "CallEndedData"},
	{"call_transferred", "call", "A call was transferred.", ""},
	{"agent_available", "agent", "An agent became available.", ""},
	{"agent_busy", "agent", "An agent became busy.", ""},
	{"agent_offline", "agent", "An agent went offline.", ""},
	{"conversation_started", "conversation", "A conversation started.", ""},
	{"conversation_ended", "conversation", "A conversation ended, with its analysis.", "ConversationEndedData"},
	{"escalation_triggered", "conversation", "A conversation was escalated to a person.", "EscalationTriggeredData"},
	{"system_error", "system", "The voice platform reported an error.", ""},
	{"maintenance_scheduled", "system", "Maintenance was scheduled.", ""},
	{"quota_exceeded", "system", "A quota was exceeded.", ""},
	{"ticket_created", "ticket", "A triage ticket was opened.", "TicketEventData"},
	{"ticket_updated", "ticket", "A ticket's fields changed.", "TicketEventData"},
	{"ticket_status_changed", "ticket", "A ticket's status changed.", "TicketEventData"},
	{"ticket_commented", "ticket", "A ticket got a comment.", "TicketEventData"},
	{"ticket_merged", "ticket", "Tickets were merged into a ticket.", "TicketEventData"},
	{"ticket_deleted", "ticket", "A ticket was deleted.", "TicketEventData"},
	{"test_invocation_completed", "testing", "Every run of a test invocation has a result.", "InvocationEventData"},
	{"test_invocation_cancelled", "testing", "A test invocation was cancelled.", "InvocationEventData"},
}
