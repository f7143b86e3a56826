package cli

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

func (a *app) agentsCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "agents", Short: "Agents: list, show, export and apply"}
	cmd.AddCommand(a.agentsListCommand(), a.agentsShowCommand(), a.agentsExportCommand(), a.agentsApplyCommand())
	return cmd
}

func (a *app) agentsListCommand() *cobra.Command {
	var search, cursor string
	var pageSize int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List agents, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{"page_size": {strconv.Itoa(pageSize)}}
			setIf(q, "search", search)
			setIf(q, "cursor", cursor)
			var page struct {
				Agents []struct {
					AgentID string   `json:"agent_id"`
					Name    string   `json:"name"`
					Tags    []string `json:"tags"`
					Created int64    `json:"created_at_unix_secs"`
				} `json:"agents"`
				HasMore    bool    `json:"has_more"`
				NextCursor *string `json:"next_cursor"`
			}
			if show, err := a.fetch(cmd.Context(), listAgents, nil, q, nil, &page); !show {
				return err
			}
			rows := make([][]string, len(page.Agents))
			for i, ag := range page.Agents {
				rows[i] = []string{ag.AgentID, clip(ag.Name, 50), dash(strings.Join(ag.Tags, ",")), unixTime(ag.Created)}
			}
			table(a.stdout, []string{"ID", "NAME", "TAGS", "CREATED"}, rows)
			a.moreHint(page.HasMore, page.NextCursor)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&search, "search", "", "only agents whose name contains this")
	f.IntVar(&pageSize, "page-size", 30, "agents per page (1-100)")
	f.StringVar(&cursor, "cursor", "", "page cursor from a previous listing")
	return cmd
}

func (a *app) agentsShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show <agent_id>",
		Short: "Show an agent",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var ag struct {
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
			if show, err := a.fetch(cmd.Context(), getAgent, args, nil, nil, &ag); !show {
				return err
			}
			fields(a.stdout, "ID", ag.AgentID, "Name", ag.Name, "Tags", dash(strings.Join(ag.Tags, ", ")),
				"Created", unixTime(ag.Created), "First message", dash(clip(ag.Config.Agent.FirstMessage, 200)),
				"Prompt", dash(clip(ag.SystemPrompt, 200)), "Tools", strconv.Itoa(len(ag.Config.Agent.Prompt.Tools)))
			return nil
		},
	}
}
