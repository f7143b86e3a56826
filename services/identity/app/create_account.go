package app

import (
	"context"
	"errors"

	identityv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/identity/v1"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/ids"
	"github.com/voiceai-platform/voiceai/pkg/principal"
)

// AccountEmail is the address a service account acts under (tests record
// who ran them by e-mail).
func AccountEmail(userID string) string { return userID + "@service-accounts.voiceai.local" }

// CreateServiceAccount adds a service account to the workspace.
func (a *App) CreateServiceAccount(ctx context.Context, caller principal.Caller, name string) (*identityv1.ServiceAccount, error) {
	workspaceID, commandID := caller.WorkspaceID, caller.CommandID
	// The name's bounds are the schema's (IdentityName), checked at the edge.
	var v apperr.Validator
	name = trimName(&v, name)
	if err := v.Err(); err != nil {
		return nil, err
	}
	userID := ids.New("sa")
	if commandID != "" {
		// A retried command must land on the same subject to be deduplicated.
		userID = "sa_" + esproto.StableID(workspaceID, commandID)
	}
	if err := a.checkAccountRoom(ctx, workspaceID, userID, commandID); err != nil {
		return nil, err
	}
	acct, err := a.createAccount(ctx, workspaceID, userID, name, commandID)
	if errors.Is(err, eventlog.ErrConflict) {
		return nil, apperr.ServiceAccountExists
	}
	return acct, err
}

// checkAccountRoom refuses a new service account in a workspace that has
// Limits.Accounts; a keyed retry of a create that made its account is
// answered as it was.
func (a *App) checkAccountRoom(ctx context.Context, workspaceID, userID, commandID string) error {
	return a.checkRoom(ctx, workspaceID, bound{Accounts, a.Limits.Accounts, "service accounts", raiseIt}, func() (bool, error) {
		if commandID == "" {
			return false, nil
		}
		_, err := a.loadAccount(ctx, workspaceID, userID)
		return err == nil, nil
	})
}

func (a *App) createAccount(ctx context.Context, workspaceID, userID, name, commandID string) (*identityv1.ServiceAccount, error) {
	subject, err := events.ServiceAccountSubject(workspaceID, userID)
	if err != nil {
		return nil, err
	}
	now := a.Now()
	acct := &identityv1.ServiceAccount{
		UserId: userID, WorkspaceId: workspaceID, Name: name,
		Email: AccountEmail(userID), CreatedAtUnix: now.Unix(), CreatedAtUnixNanos: now.UnixNano(),
	}
	meta := esproto.Meta(ctx, workspaceID, commandID, a.Now())
	res, err := a.record(ctx, subject, 0, meta, &identityv1.ServiceAccountCreated{Meta: meta, Account: acct})
	if err != nil {
		return nil, err
	}
	if res.Duplicate {
		return a.loadAccount(ctx, workspaceID, userID)
	}
	return acct, nil
}

// Account returns a service account of the workspace, or a 404.
func (a *App) Account(ctx context.Context, workspaceID, userID string) (*identityv1.ServiceAccount, error) {
	return a.loadAccount(ctx, workspaceID, userID)
}
