package cli

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

type agentRow struct {
	AgentID  string   `json:"agent_id"`
	Name     string   `json:"name"`
	Tags     []string `json:"tags"`
	Created  int64    `json:"created_at_unix_secs"`
	LastCall *int64   `json:"last_call_time_unix_secs"`
}

func (a *app) agentsListCommand() *cobra.Command {
	return listCommand(a, listing[agentRow]{
		short: "List agents, newest first", route: listAgents, items: "agents", noun: "agents", pageSize: 30,
		filters: []filter{text("search", "search", "only agents whose name contains this")},
		header:  []string{"ID", "NAME", "TAGS", "LAST CALL", "CREATED"},
		row: func(ag agentRow) []string {
			lastCall := "-"
			if ag.LastCall != nil {
				lastCall = unixTime(*ag.LastCall)
			}
			return []string{ag.AgentID, clip(ag.Name, 50), dash(strings.Join(ag.Tags, ",")), lastCall, unixTime(ag.Created)}
		},
	})
}

type agentDetail struct {
	AgentID      string   `json:"agent_id"`
	Name         string   `json:"name"`
	SystemPrompt string   `json:"system_prompt"`
	Tags         []string `json:"tags"`
	Created      int64    `json:"created_at_unix"`
	Config       struct {
		Agent struct {
			FirstMessage string `json:"first_message"`
			Prompt       struct {
				Tools []json.RawMessage `json:"tools"`
			} `json:"prompt"`
		} `json:"agent"`
	} `json:"conversation_config"`
}

func (a *app) agentsShowCommand() *cobra.Command {
	return callCommand(a, "show <agent_id>", "Show an agent", getAgent, func(ag agentDetail) {
		fields(a.stdout, "ID", ag.AgentID, "Name", ag.Name, "Tags", dash(strings.Join(ag.Tags, ", ")),
			"Created", unixTime(ag.Created), "First message", dash(clip(ag.Config.Agent.FirstMessage, 200)),
			"Prompt", dash(clip(ag.SystemPrompt, 200)), "Tools", strconv.Itoa(len(ag.Config.Agent.Prompt.Tools)))
	})
}
