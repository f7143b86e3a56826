package cli

import (
	"strconv"

	"github.com/spf13/cobra"
)

func (a *app) membersCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "members", Short: "The workspace's members (people and service accounts)"}
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the workspace's members",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var page struct {
				Members []struct {
					UserID    string `json:"user_id"`
					Email     string `json:"email"`
					FirstName string `json:"first_name"`
					Role      string `json:"role"`
					Service   bool   `json:"is_service_account"`
					Created   int64  `json:"created_at_unix"`
				} `json:"members"`
			}
			if show, err := a.fetch(cmd.Context(), listMembers, nil, nil, nil, &page); !show {
				return err
			}
			rows := make([][]string, 0, len(page.Members))
			for _, m := range page.Members {
				rows = append(rows, []string{m.UserID, dash(m.Email), dash(m.FirstName), m.Role, strconv.FormatBool(m.Service), unixTime(m.Created)})
			}
			table(a.stdout, []string{"USER", "EMAIL", "NAME", "ROLE", "SERVICE ACCOUNT", "ADDED"}, rows)
			return nil
		},
	})
	return cmd
}
