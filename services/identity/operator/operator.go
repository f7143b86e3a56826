// Package operator is the operator's side of identity: creating a
// workspace with its first admin key. It is served on a NATS subject the
// gateway never routes to, so only those with access to the NATS cluster
// (operators) can call it; the CLI subcommand is its client.
package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/micro"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/pkg/runtime"
	"github.com/voiceai-platform/voiceai/services/identity/app"
)

// CreateWorkspaceSubject is the operator endpoint's subject.
const CreateWorkspaceSubject = "svc.identity.ops.create_workspace"

// CreateWorkspaceRequest names the new workspace.
type CreateWorkspaceRequest struct {
	Name        string `json:"name"`
	WorkspaceID string `json:"workspace_id,omitempty"`
	OwnerEmail  string `json:"owner_email,omitempty"`
}

// CreateWorkspaceResponse carries the first admin key, shown once.
type CreateWorkspaceResponse struct {
	WorkspaceID          string `json:"workspace_id"`
	ServiceAccountUserID string `json:"service_account_user_id"`
	KeyID                string `json:"key_id"`
	APIKey               string `json:"api_key"`
	OwnerUserID          string `json:"owner_user_id,omitempty"`
	Error                string `json:"error,omitempty"`
}

// Register adds the operator endpoint to the identity micro service.
func Register(svc micro.Service, a *app.App) error {
	return svc.AddEndpoint("create_workspace", micro.HandlerFunc(func(req micro.Request) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var in CreateWorkspaceRequest
		var out CreateWorkspaceResponse
		if err := json.Unmarshal(req.Data(), &in); err != nil || in.Name == "" {
			out.Error = "send {\"name\": \"…\"}"
		} else if ws, err := a.CreateWorkspace(ctx, in.WorkspaceID, in.Name); err != nil {
			out.Error = err.Error()
		} else {
			out = CreateWorkspaceResponse{WorkspaceID: ws.WorkspaceID, ServiceAccountUserID: ws.AdminAccountID, KeyID: ws.KeyID, APIKey: ws.Secret}
			if in.OwnerEmail != "" {
				if u, err := a.AddUser(ctx, principal.In(ws.WorkspaceID), app.NewMember{Email: in.OwnerEmail, Role: app.RoleAdmin, Owner: true}); err != nil {
					out.Error = "workspace created, owner not added: " + err.Error()
				} else {
					out.OwnerUserID = u.GetUserId()
				}
			}
		}
		_ = req.RespondJSON(out)
	}), micro.WithEndpointSubject(CreateWorkspaceSubject))
}

// DialTimeout bounds how long the operator's command tries to reach NATS.
const DialTimeout = 30 * time.Second

// WorkspaceCommand is `workspace create --name NAME [--id ID]`.
func WorkspaceCommand(natsURL func() (string, error)) *cobra.Command {
	ws := &cobra.Command{Use: "workspace", Short: "Operator commands for workspaces"}
	var name, id, owner string
	create := &cobra.Command{
		Use:   "create",
		Short: "Create a workspace and print its first admin API key (shown once)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			url, err := natsURL()
			if err != nil {
				return err
			}
			// Dialled as the services dial, retrying with back-off: NATS
			// may still be starting (a platform started a moment ago).
			dctx, cancel := context.WithTimeout(cmd.Context(), DialTimeout)
			defer cancel()
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			link, err := runtime.DialNATS(dctx, "operator", url, log, prometheus.NewRegistry())
			if err != nil {
				return err
			}
			defer link.Close()
			body, _ := json.Marshal(CreateWorkspaceRequest{Name: name, WorkspaceID: id, OwnerEmail: owner})
			msg, err := link.NC.Request(CreateWorkspaceSubject, body, 30*time.Second)
			if err != nil {
				return fmt.Errorf("identity service did not answer (is the platform running?): %w", err)
			}
			var out CreateWorkspaceResponse
			if err := json.Unmarshal(msg.Data, &out); err != nil {
				return err
			}
			if out.Error != "" {
				return fmt.Errorf("create workspace: %s", out.Error)
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(out)
		},
	}
	create.Flags().StringVar(&name, "name", "", "workspace name (required)")
	create.Flags().StringVar(&id, "id", "", "workspace id (default: generated)")
	create.Flags().StringVar(&owner, "owner-email", "", "e-mail of the workspace's first (admin) member")
	_ = create.MarkFlagRequired("name")
	ws.AddCommand(create)
	return ws
}
