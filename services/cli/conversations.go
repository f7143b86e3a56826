package cli

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

func (a *app) conversationsCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "conversations", Short: "The conversations the platform has recorded: list, show with the transcript"}
	cmd.AddCommand(a.conversationsListCommand(), a.conversationsShowCommand())
	return cmd
}

type conversationRow struct {
	AgentID        string `json:"agent_id"`
	ConversationID string `json:"conversation_id"`
	Start          int64  `json:"start_time_unix_secs"`
	Duration       int64  `json:"call_duration_secs"`
	Messages       int    `json:"message_count"`
	Status         string `json:"status"`
	CallSuccessful string `json:"call_successful"`
}

func (a *app) conversationsListCommand() *cobra.Command {
	var agent, outcome, cursor string
	var since, until time.Duration
	var pageSize int
	cmd := &cobra.Command{
		Use:   "list [filters]",
		Short: "List the workspace's conversations, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{"page_size": {strconv.Itoa(pageSize)}}
			setIf(q, "agent_id", agent)
			setIf(q, "call_successful", outcome)
			setIf(q, "cursor", cursor)
			for param, ago := range map[string]time.Duration{"call_start_after_unix": since, "call_start_before_unix": until} {
				if ago > 0 {
					q.Set(param, strconv.FormatInt(time.Now().Add(-ago).Unix(), 10))
				}
			}
			var page struct {
				Conversations []conversationRow `json:"conversations"`
				HasMore       bool              `json:"has_more"`
				NextCursor    *string           `json:"next_cursor"`
			}
			if show, err := a.fetch(cmd.Context(), listConversations, nil, q, nil, &page); !show {
				return err
			}
			rows := make([][]string, len(page.Conversations))
			for i, c := range page.Conversations {
				rows[i] = []string{c.ConversationID, c.AgentID, unixTime(c.Start), (time.Duration(c.Duration) * time.Second).String(),
					strconv.Itoa(c.Messages), c.Status, c.CallSuccessful}
			}
			table(a.stdout, []string{"ID", "AGENT", "STARTED", "DURATION", "MESSAGES", "STATUS", "OUTCOME"}, rows)
			a.moreHint(page.HasMore, page.NextCursor)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&agent, "agent", "", "agent id")
	f.StringVar(&outcome, "outcome", "", "success, failure or unknown (call_successful)")
	f.DurationVar(&since, "since", 0, "started within this long ago, e.g. 24h")
	f.DurationVar(&until, "until", 0, "started more than this long ago, e.g. 1h")
	f.IntVar(&pageSize, "page-size", 30, "conversations per page (1-100)")
	f.StringVar(&cursor, "cursor", "", "page cursor from a previous listing")
	return cmd
}

func (a *app) conversationsShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show <conversation_id>",
		Short: "Show a conversation: its transcript and the tickets raised on it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var c struct {
				AgentID  string `json:"agent_id"`
				ID       string `json:"conversation_id"`
				Status   string `json:"status"`
				Metadata struct {
					Start    int64 `json:"start_time_unix_secs"`
					Duration int64 `json:"call_duration_secs"`
				} `json:"metadata"`
				Analysis struct {
					CallSuccessful string `json:"call_successful"`
				} `json:"analysis"`
				Transcript []struct {
					Role      string  `json:"role"`
					Message   *string `json:"message"`
					At        float64 `json:"time_in_call_secs"`
					ToolCalls []struct {
						Name   string `json:"tool_name"`
						Params string `json:"params_as_json"`
					} `json:"tool_calls"`
					ToolResults []json.RawMessage `json:"tool_results"`
				} `json:"transcript"`
				Tickets []ticket `json:"triage_tickets"`
			}
			if show, err := a.fetch(cmd.Context(), getConversation, args, nil, nil, &c); !show {
				return err
			}
			fields(a.stdout, "ID", c.ID, "Agent", c.AgentID, "Status", c.Status, "Started", unixTime(c.Metadata.Start),
				"Duration", (time.Duration(c.Metadata.Duration) * time.Second).String(), "Outcome", c.Analysis.CallSuccessful)
			fmt.Fprintf(a.stdout, "Transcript (%d turns):\n", len(c.Transcript))
			for i, t := range c.Transcript {
				fmt.Fprintf(a.stdout, "  %3d %6.1fs %-5s %s\n", i, t.At, t.Role, oneLine(orDash(t.Message)))
				for _, tc := range t.ToolCalls {
					fmt.Fprintf(a.stdout, "               tool call %s %s\n", tc.Name, oneLine(tc.Params))
				}
				for _, tr := range t.ToolResults {
					fmt.Fprintf(a.stdout, "               tool result %s\n", oneLine(string(tr)))
				}
			}
			ids := make([]string, 0, len(c.Tickets))
			for _, t := range c.Tickets {
				ids = append(ids, t.ID+" ("+t.Status+")")
			}
			fields(a.stdout, "Tickets", dash(strings.Join(ids, ", ")))
			return nil
		},
	}
}
