package cli

import (
	"strconv"

	"github.com/spf13/cobra"
)

func (a *app) membersCommand() *cobra.Command {
	return group("members", "The workspace's members (people and service accounts)", &cobra.Command{
		Use:   "list",
		Short: "List the workspace's members",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var members []struct {
				UserID    string `json:"user_id"`
				Email     string `json:"email"`
				FirstName string `json:"first_name"`
				Role      string `json:"role"`
				Locked    bool   `json:"is_locked"`
				Service   bool   `json:"is_service_account"`
				Created   int64  `json:"created_at_unix"`
			}
			if show, err := a.fetch(cmd.Context(), listMembers, nil, nil, nil, &members); !show {
				return err
			}
			rows := make([][]string, 0, len(members))
			for _, m := range members {
				rows = append(rows, []string{m.UserID, dash(m.Email), dash(m.FirstName), m.Role, strconv.FormatBool(m.Locked), strconv.FormatBool(m.Service), unixTime(m.Created)})
			}
			table(a.stdout, []string{"USER", "EMAIL", "NAME", "ROLE", "LOCKED", "SERVICE ACCOUNT", "ADDED"}, rows)
			return nil
		},
	})
}
