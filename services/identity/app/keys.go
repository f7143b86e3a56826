package app

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	identityv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/identity/v1"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/ids"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/identity/domain"
)

// KeySpec is what a new key is made of.
type KeySpec struct {
	Name               string
	Permissions        []string
	AllowedIPs         []string
	ExpiresAtUnix      *int64
	RateLimitPerMinute *int64
	RateLimitPerHour   *int64
}

// CreateKey mints a key for a service account. The secret is returned
// here and never again: only its hash is stored.
func (a *App) CreateKey(ctx context.Context, caller principal.Caller, accountID string, spec KeySpec) (secret string, key *identityv1.ApiKey, err error) {
	commandID := caller.CommandID
	if _, err := a.loadAccount(ctx, caller.WorkspaceID, accountID); err != nil {
		return "", nil, err
	}
	if err := a.checkSpec(&spec, caller.Principal); err != nil {
		return "", nil, err
	}
	bounds, err := a.boundsOf(ctx, caller.Principal)
	if err != nil {
		return "", nil, err
	}
	if err := bounds.limitsOnly(&spec); err != nil {
		return "", nil, err
	}
	secret = domain.NewSecret()
	keyID := ids.New("key")
	if commandID != "" {
		// A retried create answers the same key id; its secret cannot be
		// shown twice, so the retry gets a 409 telling so.
		keyID = "key_" + esproto.StableID(caller.WorkspaceID, commandID)
	}
	if err := a.checkKeyRoom(ctx, caller.WorkspaceID, keyID, commandID); err != nil {
		return "", nil, err
	}
	key, dup, err := a.mintKey(ctx, caller.WorkspaceID, accountID, keyID, secret, spec, commandID)
	if errors.Is(err, eventlog.ErrConflict) {
		return "", nil, apperr.APIKeyExists
	}
	if err != nil {
		return "", nil, err
	}
	if dup {
		return "", nil, apperr.APIKeyAlreadyCreated(keyID)
	}
	return secret, key, nil
}

// checkKeyRoom refuses a new key in a workspace that has Limits.Keys
// live ones; revoking one makes room. A keyed retry of a create that made
// its key goes on, to be told so (api_key_already_created).
func (a *App) checkKeyRoom(ctx context.Context, workspaceID, keyID, commandID string) error {
	return a.checkRoom(ctx, workspaceID, bound{LiveKeys, a.Limits.Keys, "live API keys", "revoke one before creating another"}, func() (bool, error) {
		if commandID == "" {
			return false, nil
		}
		_, _, err := a.keys().Get(ctx, workspaceID, keyID)
		return err == nil, nil
	})
}

func (a *App) mintKey(ctx context.Context, workspaceID, accountID, keyID, secret string, spec KeySpec, commandID string) (*identityv1.ApiKey, bool, error) {
	subject, err := events.APIKeySubject(workspaceID, keyID)
	if err != nil {
		return nil, false, err
	}
	now := a.Now()
	key := &identityv1.ApiKey{
		KeyId: keyID, WorkspaceId: workspaceID, ServiceAccountUserId: accountID,
		Name: spec.Name, Hint: domain.Hint(secret), SecretSha256: domain.HashSecret(secret),
		Permissions: spec.Permissions, AllowedIps: spec.AllowedIPs, ExpiresAtUnix: spec.ExpiresAtUnix,
		CreatedAtUnix: now.Unix(), CreatedAtUnixNanos: now.UnixNano(), UpdatedAtUnix: now.Unix(),
		RateLimitPerMinute: spec.RateLimitPerMinute, RateLimitPerHour: spec.RateLimitPerHour,
	}
	meta := esproto.Meta(ctx, workspaceID, commandID, a.Now())
	res, err := a.record(ctx, subject, 0, meta, &identityv1.ApiKeyCreated{Meta: meta, Key: key})
	if err != nil {
		return nil, false, err
	}
	return key, res.Duplicate, nil
}

// checkSpec checks and normalises a key spec in place. Its shape (the
// name's and the lists' bounds, the permission names, the rate limits) is
// the schema's (ApiKeyCreate), checked at the edge; what is left here is
// what no schema can say: addresses that parse, an expiry against the
// clock, and permissions against the caller's.
func (a *App) checkSpec(spec *KeySpec, caller principal.Principal) error {
	var v apperr.Validator
	spec.Name = trimName(&v, spec.Name)
	spec.Permissions = domain.NormalizePermissions(spec.Permissions)
	ips, err := domain.NormalizeAllowedIPs(spec.AllowedIPs)
	addFieldError(&v, err)
	spec.AllowedIPs = ips
	if spec.ExpiresAtUnix != nil {
		v.Check(*spec.ExpiresAtUnix > a.Now().Unix(), "Expiry must be in the future", "value_error", "body", "expires_at_unix")
		v.Check(*spec.ExpiresAtUnix <= a.Now().Add(MaxKeyLifetime).Unix(), "Expiry must be at most 10 years away", "value_error", "body", "expires_at_unix")
	}
	if err := v.Err(); err != nil {
		return err
	}
	if !domain.CanGrant(caller.Permissions, spec.Permissions) {
		return apperr.PermissionEscalation
	}
	return nil
}

// narrowsOnly refuses a change by a caller that is not a workspace admin
// that would loosen k: its rate limits (admins set those), lifting its
// allow-list, or addresses outside its own or the caller's. (Its
// permissions are checked against the caller's in applyPatch.)
func (b *keyBounds) narrowsOnly(k *identityv1.ApiKey, p KeyPatch) error {
	if b == nil {
		return nil
	}
	if p.RateLimitPerMinute != nil || p.RateLimitPerHour != nil || (p.ClearAllowedIPs && len(k.GetAllowedIps()) > 0) {
		return apperr.MissingPermission("workspace_write")
	}
	if p.AllowedIPs != nil {
		ips, err := domain.NormalizeAllowedIPs(p.AllowedIPs)
		if err == nil && (!domain.WithinAllowedIPs(ips, k.GetAllowedIps()) || !domain.WithinAllowedIPs(ips, b.AllowedIPs)) {
			return apperr.ValidationErrors{{Loc: []any{"body", "allowed_ips"}, Msg: "Only a workspace admin widens a key's allow-list: " +
				"these addresses must lie within the key's own and its editor's", Type: "value_error"}}
		}
	}
	return nil
}

// keyBounds are the restrictions a caller that is not a workspace admin
// passes on to the keys it makes or changes: its own key's IP allow-list
// and expiry (a key's rate limits are set by admins alone). nil: the
// caller is an admin, or no key (the platform itself), and passes none.
type keyBounds struct {
	AllowedIPs    []string
	ExpiresAtUnix *int64
}

func (a *App) boundsOf(ctx context.Context, caller principal.Principal) (*keyBounds, error) {
	if caller.IsAdmin() || caller.KeyID == "" {
		return nil, nil
	}
	own, _, err := a.keys().Get(ctx, caller.WorkspaceID, caller.KeyID)
	if err != nil {
		return nil, err
	}
	return &keyBounds{AllowedIPs: own.GetAllowedIps(), ExpiresAtUnix: own.ExpiresAtUnix}, nil
}

// limitsOnly refuses what only a workspace admin may give a key: rate
// limits, an allow-list wider than the caller's own, a later expiry (or
// none where the caller's expires). A new key without an allow-list or
// an expiry takes the caller's.
func (b *keyBounds) limitsOnly(spec *KeySpec) error {
	if b == nil {
		return nil
	}
	if spec.RateLimitPerMinute != nil || spec.RateLimitPerHour != nil {
		return apperr.MissingPermission("workspace_write")
	}
	if len(spec.AllowedIPs) == 0 {
		spec.AllowedIPs = b.AllowedIPs
	}
	if !domain.WithinAllowedIPs(spec.AllowedIPs, b.AllowedIPs) {
		return apperr.ValidationErrors{{Loc: []any{"body", "allowed_ips"}, Msg: "A key can only be given addresses within its maker's own allow-list (" +
			strings.Join(b.AllowedIPs, ", ") + ") unless a workspace admin makes it", Type: "value_error"}}
	}
	if b.ExpiresAtUnix != nil {
		if spec.ExpiresAtUnix == nil {
			spec.ExpiresAtUnix = b.ExpiresAtUnix
		}
		if *spec.ExpiresAtUnix > *b.ExpiresAtUnix {
			return apperr.ValidationErrors{{Loc: []any{"body", "expires_at_unix"}, Msg: "A key can only expire by its maker's own expiry unless a workspace admin makes it", Type: "value_error"}}
		}
	}
	return nil
}

// MaxKeyLifetime bounds a key's expiry: an expiry past it is a mistake
// (2^63-1 was accepted, then overflowed into "expired").
const MaxKeyLifetime = 10 * 365 * 24 * time.Hour

// trimName is a name without the white space around it. The schema
// (IdentityName) refuses a blank name, but its \S is ASCII's: a name of
// only other white space (U+00A0, U+2003, \v...) passes it, and would be
// stored empty.
func trimName(v *apperr.Validator, name string) string {
	name = strings.TrimSpace(name)
	v.Check(name != "", "String should have a character other than white space", "string_too_short", "body", "name")
	return name
}

func addFieldError(v *apperr.Validator, err error) {
	var fe *domain.FieldError
	if errors.As(err, &fe) {
		if fe.Index >= 0 {
			v.Add(fe.Msg, "value_error", "body", fe.Field, fe.Index)
		} else {
			v.Add(fe.Msg, "value_error", "body", fe.Field)
		}
	}
}

// KeyPatch is a partial update; nil fields are left alone.
type KeyPatch struct {
	Name               *string
	IsDisabled         *bool
	Permissions        []string // nil = unchanged
	AllowedIPs         []string // nil = unchanged
	ClearAllowedIPs    bool
	RateLimitPerMinute *int64
	RateLimitPerHour   *int64
}

// UpdateKey applies patch to a live key. With a command id (an
// Idempotency-Key) a replay answers the first result, whatever its patch.
func (a *App) UpdateKey(ctx context.Context, caller principal.Caller, accountID, keyID string, patch KeyPatch) (*identityv1.ApiKey, error) {
	commandID := caller.CommandID
	bounds, err := a.boundsOf(ctx, caller.Principal)
	if err != nil {
		return nil, err
	}
	k, err := a.keys().Update(ctx, caller.WorkspaceID, keyID, commandID, func(next *identityv1.ApiKey, meta *commonv1.EventMeta) (proto.Message, error) {
		if next.GetServiceAccountUserId() != accountID {
			return nil, apperr.APIKeyNotFound
		}
		if err := bounds.narrowsOnly(next, patch); err != nil {
			return nil, err
		}
		changed, err := a.applyPatch(next, patch, caller.Principal)
		if err != nil || len(changed) == 0 {
			return nil, err
		}
		return &identityv1.ApiKeyUpdated{Meta: meta, Key: next, ChangedFields: changed}, nil
	})
	return ofAccount(k, accountID, err)
}

// ofAccount answers k if it is a key of the account (a replay, whose
// path may name another, is checked here).
func ofAccount(k *identityv1.ApiKey, accountID string, err error) (*identityv1.ApiKey, error) {
	if err == nil && k.GetServiceAccountUserId() != accountID {
		return nil, apperr.APIKeyNotFound
	}
	return k, err
}

// applyPatch changes k as p says and answers the names of the fields it
// changed. The patch's shape is the schema's (ApiKeyUpdate), checked at
// the edge; here are the addresses' parsing and the grant against the
// editor's permissions.
func (a *App) applyPatch(k *identityv1.ApiKey, p KeyPatch, caller principal.Principal) ([]string, error) {
	// A key may change only a key that holds no more than it does: else a
	// key with service_account_write alone could enable a disabled admin
	// key, lift its IP restriction and rate limits, and use it.
	if !domain.CanGrant(caller.Permissions, k.Permissions) {
		return nil, apperr.PermissionEscalation
	}
	var v apperr.Validator
	var changed []string
	if p.Name != nil {
		if name := trimName(&v, *p.Name); name != "" && name != k.Name {
			k.Name, changed = name, append(changed, "name")
		}
	}
	if p.IsDisabled != nil && *p.IsDisabled != k.IsDisabled {
		k.IsDisabled, changed = *p.IsDisabled, append(changed, "is_disabled")
	}
	if p.Permissions != nil {
		perms := domain.NormalizePermissions(p.Permissions)
		if !domain.CanGrant(caller.Permissions, perms) {
			return nil, apperr.PermissionEscalation
		}
		if !slices.Equal(perms, k.Permissions) {
			k.Permissions, changed = perms, append(changed, "permissions")
		}
	}
	if p.ClearAllowedIPs && len(k.AllowedIps) > 0 {
		k.AllowedIps, changed = nil, append(changed, "allowed_ips")
	} else if p.AllowedIPs != nil {
		ips, err := domain.NormalizeAllowedIPs(p.AllowedIPs)
		addFieldError(&v, err)
		if err == nil && !slices.Equal(ips, k.AllowedIps) {
			k.AllowedIps, changed = ips, append(changed, "allowed_ips")
		}
	}
	if p.RateLimitPerMinute != nil {
		k.RateLimitPerMinute, changed = p.RateLimitPerMinute, append(changed, "rate_limit_per_minute")
	}
	if p.RateLimitPerHour != nil {
		k.RateLimitPerHour, changed = p.RateLimitPerHour, append(changed, "rate_limit_per_hour")
	}
	return changed, v.Err()
}

// RevokeKey ends a key for good; gateways drop it as soon as they see the
// event. With a command id a replay answers as the first did (not 404).
func (a *App) RevokeKey(ctx context.Context, caller principal.Caller, accountID, keyID string) error {
	commandID := caller.CommandID
	k, err := a.keys().Update(ctx, caller.WorkspaceID, keyID, commandID, func(next *identityv1.ApiKey, meta *commonv1.EventMeta) (proto.Message, error) {
		if next.GetServiceAccountUserId() != accountID {
			return nil, apperr.APIKeyNotFound
		}
		if !domain.CanGrant(caller.Permissions, next.Permissions) {
			return nil, apperr.PermissionEscalation // a weaker key may not end a stronger one
		}
		now := a.Now().Unix()
		next.RevokedAtUnix = &now
		return &identityv1.ApiKeyRevoked{Meta: meta, Key: next}, nil
	})
	_, err = ofAccount(k, accountID, err)
	return err
}

func (a *App) revoke(ctx context.Context, cur *identityv1.ApiKey, seq uint64) error {
	next := proto.Clone(cur).(*identityv1.ApiKey)
	now := a.Now().Unix()
	next.RevokedAtUnix, next.UpdatedAtUnix = &now, now
	subject, _ := events.APIKeySubject(cur.WorkspaceId, cur.KeyId)
	meta := esproto.Meta(ctx, cur.WorkspaceId, "", a.Now())
	_, err := a.record(ctx, subject, seq, meta, &identityv1.ApiKeyRevoked{Meta: meta, Key: next})
	return err
}
