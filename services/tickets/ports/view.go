package ports

import (
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// ticketView is a ticket on the wire: every field of spec 2.1 (null where
// the spec says "or null", never absent) plus the public fields.
type ticketView struct {
	AgentqaTicketID    string            `json:"agentqa_ticket_id"`
	WorkspaceID        string            `json:"workspace_id"`
	OwnerUserID        string            `json:"owner_user_id"`
	AgentID            string            `json:"agent_id"`
	NeedsClustering    bool              `json:"needs_clustering"`
	Title              string            `json:"title"`
	IssueType          *string           `json:"issue_type"`
	Labels             []string          `json:"labels"`
	ConversationIDs    []string          `json:"conversation_ids"`
	FirstSeenUnixSecs  *int64            `json:"first_seen_unix_secs"`
	LastSeenUnixSecs   *int64            `json:"last_seen_unix_secs"`
	QAComment          *string           `json:"qa_comment"`
	TicketComments     []commentView     `json:"ticket_comments"`
	TurnComments       []turnCommentView `json:"turn_comments"`
	Status             string            `json:"status"`
	Priority           *string           `json:"priority"`
	PriorityChanges    []priorityView    `json:"priority_changes"`
	StatusChanges      []statusView      `json:"status_changes"`
	MergedIntoTicketID *string           `json:"merged_into_ticket_id"`
	Source             string            `json:"source"`
	AssigneeUserID     *string           `json:"assignee_user_id"`
	CreatedAtUnixSecs  int64             `json:"created_at_unix_secs"`
	UpdatedAtUnixSecs  int64             `json:"updated_at_unix_secs"`
	SearchMatch        *app.Match        `json:"search_match,omitempty"`
	// TestFailures (an extension) links the ticket the QA worker keeps for
	// a failing test to its failed runs; absent on other tickets.
	TestFailures *testFailuresView `json:"test_failures,omitempty"`
}

type testFailuresView struct {
	TestID      string                 `json:"test_id"`
	TestName    string                 `json:"test_name"`
	FailedRuns  int64                  `json:"failed_runs"`
	Invocations []failedInvocationView `json:"invocations"`
}

type failedInvocationView struct {
	InvocationID         string   `json:"invocation_id"`
	RunIDs               []string `json:"run_ids"`
	FailedRuns           int64    `json:"failed_runs"`
	LastFailedAtUnixSecs int64    `json:"last_failed_at_unix_secs"`
}

type commentView struct {
	Comment           string  `json:"comment"`
	CreatedAtUnixSecs int64   `json:"created_at_unix_secs"`
	OwnerUserID       *string `json:"owner_user_id"`
}

type turnCommentView struct {
	TurnIndex         int32   `json:"turn_index"`
	Comment           string  `json:"comment"`
	CreatedAtUnixSecs int64   `json:"created_at_unix_secs"`
	OwnerUserID       *string `json:"owner_user_id"`
}

type statusView struct {
	Status            string  `json:"status"`
	ChangedByUserID   *string `json:"changed_by_user_id"`
	ChangedAtUnixSecs int64   `json:"changed_at_unix_secs"`
}

type priorityView struct {
	Priority          *string `json:"priority"`
	ChangedByUserID   string  `json:"changed_by_user_id"`
	ChangedAtUnixSecs int64   `json:"changed_at_unix_secs"`
}

type pageView struct {
	Tickets    []ticketView `json:"agent_conversation_tickets"`
	NextCursor *string      `json:"next_cursor"`
	HasMore    bool         `json:"has_more"`
}

func orNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func viewOf(t *ticketsv1.Ticket, m *app.Match) ticketView {
	v := ticketView{
		AgentqaTicketID: t.TicketId, WorkspaceID: t.WorkspaceId, OwnerUserID: t.OwnerUserId, AgentID: t.AgentId,
		NeedsClustering: t.NeedsClustering, Title: t.Title, IssueType: orNil(t.IssueType), Labels: t.Labels,
		ConversationIDs: t.ConversationIds, FirstSeenUnixSecs: t.FirstSeenUnixSecs, LastSeenUnixSecs: t.LastSeenUnixSecs,
		QAComment: t.QaComment, Status: t.Status, Priority: orNil(t.Priority), MergedIntoTicketID: t.MergedIntoTicketId,
		Source: t.Source, AssigneeUserID: t.AssigneeUserId, CreatedAtUnixSecs: t.CreatedAtUnixSecs,
		UpdatedAtUnixSecs: t.UpdatedAtUnixSecs, SearchMatch: m,
		TicketComments: []commentView{}, TurnComments: []turnCommentView{}, StatusChanges: []statusView{}, PriorityChanges: []priorityView{},
	}
	if v.Labels == nil {
		v.Labels = []string{}
	}
	if v.ConversationIDs == nil {
		v.ConversationIDs = []string{}
	}
	for _, c := range t.TicketComments {
		v.TicketComments = append(v.TicketComments, commentView{Comment: c.Comment, CreatedAtUnixSecs: c.CreatedAtUnixSecs, OwnerUserID: c.OwnerUserId})
	}
	for _, c := range t.TurnComments {
		v.TurnComments = append(v.TurnComments, turnCommentView{TurnIndex: c.TurnIndex, Comment: c.Comment, CreatedAtUnixSecs: c.CreatedAtUnixSecs, OwnerUserID: c.OwnerUserId})
	}
	for _, c := range t.StatusChanges {
		v.StatusChanges = append(v.StatusChanges, statusView{Status: c.Status, ChangedByUserID: c.ChangedByUserId, ChangedAtUnixSecs: c.ChangedAtUnixSecs})
	}
	if tf := t.TestFailures; tf != nil {
		v.TestFailures = &testFailuresView{TestID: tf.TestId, TestName: tf.TestName, FailedRuns: tf.FailedRuns, Invocations: []failedInvocationView{}}
		for _, inv := range tf.Invocations {
			v.TestFailures.Invocations = append(v.TestFailures.Invocations, failedInvocationView{
				InvocationID: inv.InvocationId, RunIDs: inv.RunIds, FailedRuns: inv.FailedRuns, LastFailedAtUnixSecs: inv.LastFailedAtUnixSecs})
		}
	}
	for _, c := range t.PriorityChanges {
		v.PriorityChanges = append(v.PriorityChanges, priorityView{Priority: orNil(c.Priority), ChangedByUserID: c.ChangedByUserId, ChangedAtUnixSecs: c.ChangedAtUnixSecs})
	}
	return v
}
