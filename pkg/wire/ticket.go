// Package wire holds the public JSON shapes that more than one program
// writes or reads, so each is defined once: a triage ticket is the same
// object in an API answer, in a ticket_* webhook event and in what the
// CLI decodes.
package wire

import (
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"
)

// Ticket is a triage ticket on the wire: every field of spec 2.1 (null
// where the spec says "or null", never absent) plus the public
// extensions (title, priority and the change histories).
type Ticket struct {
	AgentqaTicketID    string        `json:"agentqa_ticket_id"`
	WorkspaceID        string        `json:"workspace_id"`
	OwnerUserID        string        `json:"owner_user_id"`
	AgentID            string        `json:"agent_id"`
	NeedsClustering    bool          `json:"needs_clustering"`
	Title              string        `json:"title"`
	IssueType          *string       `json:"issue_type"`
	Labels             []string      `json:"labels"`
	ConversationIDs    []string      `json:"conversation_ids"`
	FirstSeenUnixSecs  *int64        `json:"first_seen_unix_secs"`
	LastSeenUnixSecs   *int64        `json:"last_seen_unix_secs"`
	QAComment          *string       `json:"qa_comment"`
	TicketComments     []Comment     `json:"ticket_comments"`
	TurnComments       []TurnComment `json:"turn_comments"`
	Status             string        `json:"status"`
	Priority           *string       `json:"priority"`
	PriorityChanges    []Priority    `json:"priority_changes"`
	StatusChanges      []Status      `json:"status_changes"`
	MergedIntoTicketID *string       `json:"merged_into_ticket_id"`
	Source             string        `json:"source"`
	AssigneeUserID     *string       `json:"assignee_user_id"`
	CreatedAtUnixSecs  int64         `json:"created_at_unix_secs"`
	UpdatedAtUnixSecs  int64         `json:"updated_at_unix_secs"`
	// DeletedAtUnixSecs is set on a deleted ticket only, which the API
	// never answers: a ticket_deleted event carries it.
	DeletedAtUnixSecs *int64 `json:"deleted_at_unix_secs,omitempty"`
	// TestFailures (an extension) links the ticket the QA worker keeps for
	// a failing test to its failed runs; absent on other tickets.
	TestFailures *TestFailures `json:"test_failures,omitempty"`
}

// TestFailures are the failed runs behind a failing test's ticket.
type TestFailures struct {
	TestID      string             `json:"test_id"`
	TestName    string             `json:"test_name"`
	FailedRuns  int64              `json:"failed_runs"`
	Invocations []FailedInvocation `json:"invocations"`
}

// FailedInvocation is one invocation's failed runs of that test.
type FailedInvocation struct {
	InvocationID         string   `json:"invocation_id"`
	RunIDs               []string `json:"run_ids"`
	FailedRuns           int64    `json:"failed_runs"`
	LastFailedAtUnixSecs int64    `json:"last_failed_at_unix_secs"`
}

// Comment is a ticket comment.
type Comment struct {
	Comment           string  `json:"comment"`
	CreatedAtUnixSecs int64   `json:"created_at_unix_secs"`
	OwnerUserID       *string `json:"owner_user_id"`
}

// TurnComment is a comment on one turn of the conversation.
type TurnComment struct {
	TurnIndex         int32   `json:"turn_index"`
	Comment           string  `json:"comment"`
	CreatedAtUnixSecs int64   `json:"created_at_unix_secs"`
	OwnerUserID       *string `json:"owner_user_id"`
}

// Status is one entry of a ticket's status history.
type Status struct {
	Status            string  `json:"status"`
	ChangedByUserID   *string `json:"changed_by_user_id"`
	ChangedAtUnixSecs int64   `json:"changed_at_unix_secs"`
}

// Priority is one entry of a ticket's priority history.
type Priority struct {
	Priority          *string `json:"priority"`
	ChangedByUserID   string  `json:"changed_by_user_id"`
	ChangedAtUnixSecs int64   `json:"changed_at_unix_secs"`
}

// TicketOf is the wire form of a stored ticket.
func TicketOf(t *ticketsv1.Ticket) Ticket {
	v := Ticket{
		AgentqaTicketID: t.TicketId, WorkspaceID: t.WorkspaceId, OwnerUserID: t.OwnerUserId, AgentID: t.AgentId,
		NeedsClustering: t.NeedsClustering, Title: t.Title, IssueType: orNil(t.IssueType), Labels: orEmpty(t.Labels),
		ConversationIDs: orEmpty(t.ConversationIds), FirstSeenUnixSecs: t.FirstSeenUnixSecs, LastSeenUnixSecs: t.LastSeenUnixSecs,
		QAComment: t.QaComment, Status: t.Status, Priority: orNil(t.Priority), MergedIntoTicketID: t.MergedIntoTicketId,
		Source: t.Source, AssigneeUserID: t.AssigneeUserId, CreatedAtUnixSecs: t.CreatedAtUnixSecs, UpdatedAtUnixSecs: t.UpdatedAtUnixSecs,
		DeletedAtUnixSecs: t.DeletedAtUnixSecs,
		TicketComments:    make([]Comment, 0, len(t.TicketComments)), TurnComments: make([]TurnComment, 0, len(t.TurnComments)),
		StatusChanges: make([]Status, 0, len(t.StatusChanges)), PriorityChanges: make([]Priority, 0, len(t.PriorityChanges)),
	}
	for _, c := range t.TicketComments {
		v.TicketComments = append(v.TicketComments, Comment{Comment: c.Comment, CreatedAtUnixSecs: c.CreatedAtUnixSecs, OwnerUserID: c.OwnerUserId})
	}
	for _, c := range t.TurnComments {
		v.TurnComments = append(v.TurnComments, TurnComment{TurnIndex: c.TurnIndex, Comment: c.Comment, CreatedAtUnixSecs: c.CreatedAtUnixSecs, OwnerUserID: c.OwnerUserId})
	}
	for _, c := range t.StatusChanges {
		v.StatusChanges = append(v.StatusChanges, Status{Status: c.Status, ChangedByUserID: c.ChangedByUserId, ChangedAtUnixSecs: c.ChangedAtUnixSecs})
	}
	for _, c := range t.PriorityChanges {
		v.PriorityChanges = append(v.PriorityChanges, Priority{Priority: orNil(c.Priority), ChangedByUserID: c.ChangedByUserId, ChangedAtUnixSecs: c.ChangedAtUnixSecs})
	}
	if tf := t.TestFailures; tf != nil {
		v.TestFailures = &TestFailures{TestID: tf.TestId, TestName: tf.TestName, FailedRuns: tf.FailedRuns, Invocations: make([]FailedInvocation, 0, len(tf.Invocations))}
		for _, inv := range tf.Invocations {
			v.TestFailures.Invocations = append(v.TestFailures.Invocations, FailedInvocation{
				InvocationID: inv.InvocationId, RunIDs: inv.RunIds, FailedRuns: inv.FailedRuns, LastFailedAtUnixSecs: inv.LastFailedAtUnixSecs})
		}
	}
	return v
}

func orNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
