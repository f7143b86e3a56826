package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	identityv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/identity/v1"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/identity/domain"
)

// AdminKeyFile is where a generated bootstrap key is written.
const AdminKeyFile = "admin.key"

// BootstrapResult tells the caller what start-up did.
type BootstrapResult struct {
	// GeneratedSecret is set only when a key was generated on this start;
	// it is printed once and written to KeyFile.
	GeneratedSecret string
	KeyFile         string
}

// Bootstrap makes sure the default workspace has an admin key. With
// configuredSecret set, that value becomes an all-permissions key (the
// same key on every restart; a changed value revokes the previous one).
// Without it, a key is generated once, on the very first start.
//
// Every step is idempotent, so while the event log cannot answer (a
// stream between leaders, as just after a partition heals) Bootstrap
// asks again until ctx ends: a process starting then waits for its
// cluster instead of exiting.
func (a *App) Bootstrap(ctx context.Context, configuredSecret, dataDir string) (BootstrapResult, error) {
	if configuredSecret != "" {
		if err := domain.CheckConfiguredSecret(configuredSecret); err != nil {
			return BootstrapResult{}, err
		}
	}
	// One generated secret per start: an attempt whose key was stored but
	// whose answer was lost finds it again on the next, and still shows it.
	generated := domain.NewSecret()
	return eventlog.RetryWhileUnavailable(ctx, func() (BootstrapResult, error) {
		return a.bootstrapOnce(ctx, configuredSecret, dataDir, generated)
	}, func(err error, wait time.Duration) {
		a.Log.WarnContext(ctx, "bootstrap: the event log cannot answer yet; asking again", "in", wait, "err", err)
	})
}

func (a *App) bootstrapOnce(ctx context.Context, configuredSecret, dataDir, generated string) (BootstrapResult, error) {
	if err := a.ensureWorkspace(ctx, domain.DefaultWorkspaceID, "Default"); err != nil {
		return BootstrapResult{}, err
	}
	if _, err := a.ensureAccount(ctx, domain.DefaultWorkspaceID, domain.AdminAccountID, "admin"); err != nil {
		return BootstrapResult{}, err
	}
	if configuredSecret != "" {
		return BootstrapResult{}, a.ensureConfiguredKey(ctx, configuredSecret)
	}
	subject, _ := events.APIKeySubject(domain.DefaultWorkspaceID, generatedKeyID)
	msg, _, found, err := esproto.Last(ctx, a.Store, subject)
	if err != nil {
		return BootstrapResult{}, err
	}
	key, _ := events.StateOf[*identityv1.ApiKey](msg)
	ours := found && bytes.Equal(key.GetSecretSha256(), domain.HashSecret(generated))
	if found && !ours {
		return BootstrapResult{}, nil // generated on an earlier start
	}
	if !found {
		spec := KeySpec{Name: "bootstrap admin (generated)", Permissions: []string{principal.PermissionAll}}
		// The subject is fixed and create-only: two processes racing on a
		// first start mint one key between them.
		if _, _, err := a.mintKey(ctx, domain.DefaultWorkspaceID, domain.AdminAccountID, generatedKeyID, generated, spec, ""); err != nil {
			if errors.Is(err, eventlog.ErrConflict) {
				return BootstrapResult{}, nil
			}
			return BootstrapResult{}, err
		}
	}
	path := filepath.Join(dataDir, AdminKeyFile)
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return BootstrapResult{}, err
	}
	if err := os.WriteFile(path, []byte(generated+"\n"), 0o600); err != nil {
		return BootstrapResult{}, fmt.Errorf("write %s: %w", path, err)
	}
	return BootstrapResult{GeneratedSecret: generated, KeyFile: path}, nil
}

const (
	generatedKeyID        = "key_bootstrap_generated"
	configuredKeyIDPrefix = "key_bootstrap_"
)

// ensureConfiguredKey registers the operator-supplied secret. Its key id
// derives from the secret's hash, so a restart with the same value is a
// no-op and a new value is a new key.
func (a *App) ensureConfiguredKey(ctx context.Context, secret string) error {
	keyID := configuredKeyIDPrefix + esproto.StableID("configured", secret)
	subject, _ := events.APIKeySubject(domain.DefaultWorkspaceID, keyID)
	if _, found, err := a.Store.Last(ctx, subject); err != nil || found {
		return err
	}
	spec := KeySpec{Name: "bootstrap admin (VOICEAI_BOOTSTRAP_ADMIN_KEY)", Permissions: []string{principal.PermissionAll}}
	if _, _, err := a.mintKey(ctx, domain.DefaultWorkspaceID, domain.AdminAccountID, keyID, secret, spec, "bootstrap-"+keyID); err != nil && !errors.Is(err, eventlog.ErrConflict) {
		return err
	}
	return a.revokeOtherConfiguredKeys(ctx, keyID)
}

// revokeOtherConfiguredKeys retires keys of earlier configured values.
func (a *App) revokeOtherConfiguredKeys(ctx context.Context, keep string) error {
	keys, err := a.ReadModel.ListKeys(ctx, domain.DefaultWorkspaceID, domain.AdminAccountID)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if k.ID == keep || !strings.HasPrefix(k.ID, configuredKeyIDPrefix) || k.ID == generatedKeyID {
			continue
		}
		cur, seq, err := a.loadKey(ctx, domain.DefaultWorkspaceID, domain.AdminAccountID, k.ID)
		if err != nil {
			continue // already revoked
		}
		if err := a.revoke(ctx, cur, seq); err != nil && !errors.Is(err, eventlog.ErrConflict) {
			return err
		}
	}
	return nil
}

func (a *App) ensureWorkspace(ctx context.Context, workspaceID, name string) error {
	subject, err := events.WorkspaceSubject(workspaceID)
	if err != nil {
		return err
	}
	meta := esproto.Meta(ctx, workspaceID, "create-workspace-"+workspaceID, a.Now())
	ws := &identityv1.Workspace{WorkspaceId: workspaceID, Name: name, CreatedAtUnix: a.Now().Unix()}
	_, err = a.record(ctx, subject, 0, meta, &identityv1.WorkspaceCreated{Meta: meta, Workspace: ws})
	if errors.Is(err, eventlog.ErrConflict) {
		return nil // exists
	}
	return err
}

func (a *App) ensureAccount(ctx context.Context, workspaceID, userID, name string) (*identityv1.ServiceAccount, error) {
	acct, err := a.loadAccount(ctx, workspaceID, userID)
	if err == nil {
		return acct, nil
	}
	acct, err = a.createAccount(ctx, workspaceID, userID, name, "create-account-"+workspaceID+"-"+userID)
	if errors.Is(err, eventlog.ErrConflict) {
		return a.loadAccount(ctx, workspaceID, userID)
	}
	return acct, err
}

// NewWorkspace is what an operator gets when creating a workspace: its id
// and the secret of its first admin key (shown once).
type NewWorkspace struct {
	WorkspaceID    string
	AdminAccountID string
	KeyID          string
	Secret         string
}

// CreateWorkspace is the operator's command: a new tenant with an admin
// service account and an all-permissions key.
func (a *App) CreateWorkspace(ctx context.Context, workspaceID, name string) (NewWorkspace, error) {
	if workspaceID == "" {
		workspaceID = "ws_" + esproto.StableID(name, a.Now().String())[:20]
	}
	subject, err := events.WorkspaceSubject(workspaceID)
	if err != nil {
		return NewWorkspace{}, fmt.Errorf("workspace id %q: %w", workspaceID, err)
	}
	if _, found, err := a.Store.Last(ctx, subject); err != nil {
		return NewWorkspace{}, err
	} else if found {
		return NewWorkspace{}, fmt.Errorf("workspace %s already exists", workspaceID)
	}
	if err := a.ensureWorkspace(ctx, workspaceID, name); err != nil {
		return NewWorkspace{}, err
	}
	if _, err := a.ensureAccount(ctx, workspaceID, domain.AdminAccountID, "admin"); err != nil {
		return NewWorkspace{}, err
	}
	secret := domain.NewSecret()
	keyID := "key_" + esproto.StableID(workspaceID, "first-admin")
	spec := KeySpec{Name: "first admin", Permissions: []string{principal.PermissionAll}}
	if _, _, err := a.mintKey(ctx, workspaceID, domain.AdminAccountID, keyID, secret, spec, ""); err != nil {
		return NewWorkspace{}, err
	}
	return NewWorkspace{WorkspaceID: workspaceID, AdminAccountID: domain.AdminAccountID, KeyID: keyID, Secret: secret}, nil
}
