package domain

// The public ticket events: what subscribers (webhooks) hear of a ticket's
// changes, whoever made them.
const (
	EventTicketUpdated       = "ticket_updated"
	EventTicketStatusChanged = "ticket_status_changed"
	EventTicketCommented     = "ticket_commented"
)

// PublicChange is what subscribers hear of a change the QA worker or the
// clustering step made through an event type of its own: the public
// event it amounts to, and what that event adds beside the ticket, so
// that a change reaches them the same whoever made it.
type PublicChange struct {
	Event          string
	PreviousStatus string   // for ticket_status_changed
	ChangedFields  []string // for ticket_updated
}

// FailuresRecorded is what recording a test's failed runs on its ticket
// amounts to: reopening a resolved ticket is a status change (from
// resolved); else a new failing invocation, which adds a comment, is a
// comment; else (more failed runs of an invocation already recorded) an
// update of its test_failures.
func FailuresRecorded(reopened, newInvocation bool) PublicChange {
	switch {
	case reopened:
		return PublicChange{Event: EventTicketStatusChanged, PreviousStatus: StatusResolved}
	case newInvocation:
		return PublicChange{Event: EventTicketCommented}
	default:
		return PublicChange{Event: EventTicketUpdated, ChangedFields: []string{"test_failures"}}
	}
}

// Clustered is what the clustering step's change amounts to: an update
// of the fields it changed.
func Clustered(changedFields []string) PublicChange {
	return PublicChange{Event: EventTicketUpdated, ChangedFields: changedFields}
}
