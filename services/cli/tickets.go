package cli

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

func (a *app) ticketsCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "tickets", Short: "Conversation triage tickets: list, show, assign"}
	cmd.AddCommand(a.ticketsListCommand(), a.ticketsShowCommand(), a.ticketsAssignCommand())
	return cmd
}

type ticket struct {
	ID             string   `json:"agentqa_ticket_id"`
	AgentID        string   `json:"agent_id"`
	Title          string   `json:"title"`
	Status         string   `json:"status"`
	Source         string   `json:"source"`
	Priority       *string  `json:"priority"`
	IssueType      *string  `json:"issue_type"`
	Labels         []string `json:"labels"`
	Conversations  []string `json:"conversation_ids"`
	AssigneeUserID *string  `json:"assignee_user_id"`
	QAComment      *string  `json:"qa_comment"`
	Comments       []struct {
		Comment string  `json:"comment"`
		Owner   *string `json:"owner_user_id"`
		At      int64   `json:"created_at_unix_secs"`
	} `json:"ticket_comments"`
	Created int64 `json:"created_at_unix_secs"`
	Updated int64 `json:"updated_at_unix_secs"`
}

func (a *app) ticketsListCommand() *cobra.Command {
	var status, assignee, agent, issue, search, sortBy, cursor string
	var priorities, sources []string
	var pageSize int
	cmd := &cobra.Command{
		Use:   "list [filters]",
		Short: "List the workspace's triage tickets, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{"page_size": {strconv.Itoa(pageSize)}}
			for k, v := range map[string]string{"status": status, "assignee_user_id": assignee, "agent_id": agent,
				"issue_type": issue, "search": search, "sort_by": sortBy, "cursor": cursor} {
				setIf(q, k, v)
			}
			q["priorities"], q["sources"] = priorities, sources
			var page struct {
				Tickets    []ticket `json:"agent_conversation_tickets"`
				HasMore    bool     `json:"has_more"`
				NextCursor *string  `json:"next_cursor"`
			}
			if show, err := a.fetch(cmd.Context(), listTickets, nil, q, nil, &page); !show {
				return err
			}
			rows := make([][]string, len(page.Tickets))
			for i, t := range page.Tickets {
				rows[i] = []string{t.ID, t.Status, orDash(t.Priority), t.AgentID, orDash(t.AssigneeUserID), clip(t.Title, 50), unixTime(t.Updated)}
			}
			table(a.stdout, []string{"ID", "STATUS", "PRIORITY", "AGENT", "ASSIGNEE", "TITLE", "UPDATED"}, rows)
			a.moreHint(page.HasMore, page.NextCursor)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&status, "status", "", "open, in_progress, resolved or merged")
	f.StringVar(&assignee, "assignee", "", `assignee user id, or "unassigned"`)
	f.StringVar(&agent, "agent", "", "agent id")
	f.StringVar(&issue, "issue-type", "", "issue type, e.g. knowledge_gap")
	f.StringSliceVar(&priorities, "priority", nil, "low, medium, high, urgent (repeatable)")
	f.StringSliceVar(&sources, "source", nil, "qa, agent, manual (repeatable)")
	f.StringVar(&search, "search", "", "text in the title, QA comment or comments")
	f.StringVar(&sortBy, "sort", "", "created_at (default) or priority")
	f.IntVar(&pageSize, "page-size", 100, "tickets per page (1-100)")
	f.StringVar(&cursor, "cursor", "", "page cursor from a previous listing")
	return cmd
}

func (a *app) ticketsShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show <ticket_id>",
		Short: "Show a ticket with its comments",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var t ticket
			if show, err := a.fetch(cmd.Context(), getTicket, args, nil, nil, &t); !show {
				return err
			}
			a.printTicket(t)
			return nil
		},
	}
}

func (a *app) printTicket(t ticket) {
	fields(a.stdout, "ID", t.ID, "Title", dash(t.Title), "Status", t.Status, "Priority", orDash(t.Priority),
		"Source", t.Source, "Issue type", orDash(t.IssueType), "Agent", t.AgentID, "Assignee", orDash(t.AssigneeUserID),
		"Labels", dash(strings.Join(t.Labels, ", ")), "Conversations", dash(strings.Join(t.Conversations, ", ")),
		"QA comment", orDash(t.QAComment), "Created", unixTime(t.Created), "Updated", unixTime(t.Updated))
	for _, cm := range t.Comments {
		fmt.Fprintf(a.stdout, "  %s %s: %s\n", unixTime(cm.At), orDash(cm.Owner), oneLine(cm.Comment))
	}
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
				fmt.Fprintf(a.stdout, "Ticket %s is unassigned.\n", t.ID)
			} else {
				fmt.Fprintf(a.stdout, "Ticket %s is assigned to %s.\n", t.ID, *t.AssigneeUserID)
			}
			return nil
		},
	}
}
