package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// apiKey is a key as the API shows it (never its secret).
type apiKey struct {
	KeyID       string   `json:"key_id"`
	Name        string   `json:"name"`
	Hint        string   `json:"hint"`
	Account     string   `json:"service_account_user_id"`
	Disabled    bool     `json:"is_disabled"`
	Permissions []string `json:"permissions"`
	Created     int64    `json:"created_at_unix"`
	Expires     *int64   `json:"expires_at_unix"`
}

type accounts struct {
	Accounts []struct {
		UserID string   `json:"service_account_user_id"`
		Name   string   `json:"name"`
		Keys   []apiKey `json:"api-keys"`
	} `json:"service-accounts"`
}

func (a *app) keysListCommand() *cobra.Command {
	var account string
	cmd := &cobra.Command{
		Use:   "list [--account <user_id>]",
		Short: "List API keys: of one service account, or of every one",
		Args:  cobra.NoArgs,
		RunE: a.withClient(func(cmd *cobra.Command, c *client, _ []string) error {
			var keys []apiKey
			var raw []byte
			var err error
			if account != "" {
				var out struct {
					Keys []apiKey `json:"api-keys"`
				}
				raw, err = c.call(cmd.Context(), listKeys, []string{account}, nil, nil, &out)
				keys = out.Keys
			} else {
				var out accounts
				raw, err = c.call(cmd.Context(), listAccounts, nil, nil, nil, &out)
				for _, acct := range out.Accounts {
					keys = append(keys, acct.Keys...)
				}
			}
			if err != nil {
				return err
			}
			if a.json {
				a.printJSON(raw)
				return nil
			}
			rows := make([][]string, len(keys))
			for i, k := range keys {
				state := "enabled"
				if k.Disabled {
					state = "disabled"
				}
				expires := "-"
				if k.Expires != nil {
					expires = unixTime(*k.Expires)
				}
				rows[i] = []string{k.KeyID, clip(k.Name, 30), k.Account, k.Hint, clip(strings.Join(k.Permissions, ","), 60), state, expires}
			}
			table(a.stdout, []string{"KEY ID", "NAME", "ACCOUNT", "HINT", "PERMISSIONS", "STATE", "EXPIRES"}, rows)
			return nil
		}),
	}
	cmd.Flags().StringVar(&account, "account", "", "service account user id (default: every account)")
	return cmd
}

func (a *app) keysCreateCommand() *cobra.Command {
	var account, name string
	var perms []string
	cmd := &cobra.Command{
		Use:   "create --account <user_id> --name <name> --permissions <all|p1,p2>",
		Short: "Create an API key; its secret is shown once",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			body := map[string]any{"name": name, "permissions": perms}
			if len(perms) == 1 && perms[0] == "all" {
				body["permissions"] = "all"
			}
			var out struct {
				Secret string `json:"xi-api-key"`
				KeyID  string `json:"key_id"`
			}
			if show, err := a.fetch(cmd.Context(), createKey, []string{account}, nil, body, &out); !show {
				return err
			}
			fields(a.stdout, "Key ID", out.KeyID, "Secret", out.Secret)
			fmt.Fprintln(a.stderr, "The secret is shown only now: store it safely.")
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&account, "account", "", "service account user id (required; see keys list)")
	f.StringVar(&name, "name", "", "key name (required)")
	f.StringSliceVar(&perms, "permissions", nil, `"all" or a comma-separated list, e.g. convai_read,convai_write (required)`)
	for _, n := range []string{"account", "name", "permissions"} {
		_ = cmd.MarkFlagRequired(n)
	}
	return cmd
}

func (a *app) keysRevokeCommand() *cobra.Command {
	var account string
	cmd := &cobra.Command{
		Use:   "revoke <key_id> [--account <user_id>]",
		Short: "Revoke an API key; requests with it are refused from then on",
		Args:  cobra.ExactArgs(1),
		RunE: a.withClient(func(cmd *cobra.Command, c *client, args []string) error {
			if account == "" {
				var err error
				if account, err = accountOf(cmd.Context(), c, args[0]); err != nil {
					return err
				}
			}
			raw, err := c.call(cmd.Context(), revokeKey, []string{account, args[0]}, nil, nil, nil)
			if err != nil {
				return err
			}
			if a.json {
				a.printJSON(raw)
				return nil
			}
			fmt.Fprintf(a.stdout, "Revoked key %s.\n", args[0])
			return nil
		}),
	}
	cmd.Flags().StringVar(&account, "account", "", "the key's service account (default: looked up)")
	return cmd
}

// accountOf finds the service account a key belongs to: the API names a
// key by both.
func accountOf(ctx context.Context, c *client, keyID string) (string, error) {
	var out accounts
	if _, err := c.call(ctx, listAccounts, nil, nil, nil, &out); err != nil {
		return "", err
	}
	for _, acct := range out.Accounts {
		for _, k := range acct.Keys {
			if k.KeyID == keyID {
				return acct.UserID, nil
			}
		}
	}
	return "", errors.New("no API key " + keyID + " in this workspace")
}
