package cli

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/voiceai-platform/voiceai/pkg/wire"
)

func (a *app) conversationsListCommand() *cobra.Command {
	return listCommand(a, listing[wire.ConversationRow]{
		short: "List the workspace's conversations, newest first", route: listConversations,
		items: "conversations", noun: "conversations", pageSize: 30,
		filters: []filter{
			text("agent", "agent_id", "agent id"),
			text("outcome", "call_successful", "success, failure or unknown (call_successful)"),
			ago("since", "call_start_after_unix", "started within this long ago, e.g. 24h"),
			ago("until", "call_start_before_unix", "started more than this long ago, e.g. 1h"),
			anyOf("evaluation", "evaluation_params", "criterion_id:result, e.g. accuracy:failure (repeatable; all must hold)"),
			anyOf("data", "data_collection_params", "id:op:value, op eq, neq, gt, gte, lt, lte or in (a|b) (repeatable; all must hold)"),
			anyOf("tool", "tool_names", "a tool the transcript called (repeatable; any)"),
			anyOf("tool-errored", "tool_names_errored", "a tool that answered an error (repeatable; any)"),
			text("min-duration", "call_duration_min_secs", "at least this many seconds long"),
			text("max-duration", "call_duration_max_secs", "at most this many seconds long"),
			text("rating-min", "rating_min", "rated at least this, 1-5 (a like is 5, a dislike 1)"),
			text("rating-max", "rating_max", "rated at most this, 1-5"),
			text("search", "search", "words of the transcript (all of them, whole words)"),
			anyOf("tag", "tag_ids", "a conversation tag id (repeatable; any)"),
			anyOf("exclude-status", "exclude_statuses", "leave out this status, e.g. in-progress (repeatable)"),
		},
		header: []string{"ID", "AGENT", "STARTED", "DURATION", "MESSAGES", "STATUS", "OUTCOME"},
		row: func(c wire.ConversationRow) []string {
			return []string{c.ConversationID, c.AgentID, unixTime(c.StartTimeUnix), (time.Duration(c.CallDurationSecs) * time.Second).String(),
				strconv.Itoa(c.MessageCount), c.Status, c.CallSuccessful}
		},
	})
}

type conversationDetail struct {
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

func (a *app) conversationsShowCommand() *cobra.Command {
	return callCommand(a, "show <conversation_id>", "Show a conversation: its transcript and the tickets raised on it", getConversation, func(c conversationDetail) {
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
			ids = append(ids, t.AgentqaTicketID+" ("+t.Status+")")
		}
		fields(a.stdout, "Tickets", dash(strings.Join(ids, ", ")))
	})
}
