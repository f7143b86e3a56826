package cli

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/voiceai-platform/voiceai/pkg/wire"
)

// ticket is a triage ticket as the API answers it.
type ticket = wire.Ticket

func (a *app) ticketsListCommand() *cobra.Command {
	return listCommand(a, listing[ticket]{
		short: "List the workspace's triage tickets, newest first", route: listTickets,
		items: "agent_conversation_tickets", noun: "tickets", pageSize: 100,
		filters: []filter{
			text("status", "status", "open, in_progress, resolved or merged"),
			// "none", as tickets assign takes it, is "unassigned" here too.
			aliased(text("assignee", "assignee_user_id", `assignee user id, or "unassigned" (or "none")`), map[string]string{"none": "unassigned"}),
			text("agent", "agent_id", "agent id"),
			text("issue-type", "issue_type", "issue type, e.g. knowledge_gap"),
			anyOf("priority", "priorities", "low, medium, high, urgent (repeatable)"),
			anyOf("source", "sources", "qa, agent, manual (repeatable)"),
			text("search", "search", "text in the title, QA comment or comments"),
			text("sort", "sort_by", "created_at (default) or priority"),
		},
		header: []string{"ID", "STATUS", "PRIORITY", "AGENT", "ASSIGNEE", "TITLE", "UPDATED"},
		row: func(t ticket) []string {
			return []string{t.AgentqaTicketID, t.Status, orDash(t.Priority), t.AgentID, orDash(t.AssigneeUserID), clip(t.Title, 50), unixTime(t.UpdatedAtUnixSecs)}
		},
	})
}

func (a *app) ticketsShowCommand() *cobra.Command {
	return callCommand(a, "show <ticket_id>", "Show a ticket with its comments", getTicket, func(t ticket) {
		a.printTicket(t)
	})
}

func (a *app) printTicket(t ticket) {
	kv := []string{"ID", t.AgentqaTicketID, "Title", dash(t.Title), "Status", t.Status}
	if t.MergedIntoTicketID != nil {
		kv = append(kv, "Merged into", *t.MergedIntoTicketID) // where its work goes on
	}
	kv = append(kv, "Priority", orDash(t.Priority),
		"Source", t.Source, "Issue type", orDash(t.IssueType), "Agent", t.AgentID, "Assignee", orDash(t.AssigneeUserID),
		"Labels", dash(strings.Join(t.Labels, ", ")), "Conversations", dash(strings.Join(t.ConversationIDs, ", ")))
	if t.FirstSeenUnixSecs != nil && t.LastSeenUnixSecs != nil {
		kv = append(kv, "Seen", unixTime(*t.FirstSeenUnixSecs)+" to "+unixTime(*t.LastSeenUnixSecs))
	}
	if f := t.TestFailures; f != nil {
		kv = append(kv, "Failing test", fmt.Sprintf("%s (%s): %d failed runs in %d invocations", f.TestName, f.TestID, f.FailedRuns, len(f.Invocations)))
	}
	kv = append(kv, "QA comment", orDash(t.QAComment), "Created", unixTime(t.CreatedAtUnixSecs), "Updated", unixTime(t.UpdatedAtUnixSecs))
	fields(a.stdout, kv...)
	if len(t.TicketComments)+len(t.TurnComments) > 0 {
		fmt.Fprintln(a.stdout, "Comments:")
	}
	for _, cm := range t.TicketComments {
		fmt.Fprintf(a.stdout, "  %s %s: %s\n", unixTime(cm.CreatedAtUnixSecs), orDash(cm.OwnerUserID), oneLine(cm.Comment))
	}
	for _, cm := range t.TurnComments {
		fmt.Fprintf(a.stdout, "  %s %s on turn %d: %s\n", unixTime(cm.CreatedAtUnixSecs), orDash(cm.OwnerUserID), cm.TurnIndex, oneLine(cm.Comment))
	}
	if h := ticketHistory(t); len(h) > 0 {
		fmt.Fprintln(a.stdout, "History:")
		for _, line := range h {
			fmt.Fprintln(a.stdout, "  "+line)
		}
	}
}

// ticketHistory is a ticket's status and priority changes, oldest first
// (a status change before a priority change of the same second, as a
// PATCH records them).
func ticketHistory(t ticket) []string {
	type change struct {
		at   int64
		line string
	}
	var all []change
	for _, c := range t.StatusChanges {
		all = append(all, change{c.ChangedAtUnixSecs, fmt.Sprintf("%s %s: status %s", unixTime(c.ChangedAtUnixSecs), oneLine(orDash(c.ChangedByUserID)), oneLine(c.Status))})
	}
	for _, c := range t.PriorityChanges {
		all = append(all, change{c.ChangedAtUnixSecs, fmt.Sprintf("%s %s: priority %s", unixTime(c.ChangedAtUnixSecs), oneLine(dash(c.ChangedByUserID)), oneLine(orDash(c.Priority)))})
	}
	slices.SortStableFunc(all, func(x, y change) int { return cmp.Compare(x.at, y.at) })
	out := make([]string, len(all))
	for i, c := range all {
		out[i] = c.line
	}
	return out
}

func (a *app) ticketsAssignCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "assign <ticket_id> <user_id|none>",
		Short: `Assign a ticket to a workspace member, or unassign it with "none"`,
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var assignee any = args[1]
			if args[1] == "none" {
				assignee = nil // null unassigns
			}
			var t ticket
			if show, err := a.fetch(cmd.Context(), updateTicket, args[:1], nil, map[string]any{"assignee_user_id": assignee}, &t); !show {
				return err
			}
			if t.AssigneeUserID == nil {
				fmt.Fprintf(a.stdout, "Ticket %s is unassigned.\n", t.AgentqaTicketID)
			} else {
				fmt.Fprintf(a.stdout, "Ticket %s is assigned to %s.\n", t.AgentqaTicketID, *t.AssigneeUserID)
			}
			return nil
		},
	}
}
