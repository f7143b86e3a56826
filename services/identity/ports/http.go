// Package ports serves identity over HTTP (through the gateway): service
// accounts and their API keys, in the public service-account shapes.
package ports

import (
	"cmp"
	"context"
	"encoding/json"
	"reflect"

	identityv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/identity/v1"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/identity/app"
)

// Handlers serve the identity operations of the table: runtime.Serve binds
// each to the method named after it (api.Serve).
type Handlers struct{ App *app.App }

type accountInput struct {
	Name string `json:"name"`
}

func (h *Handlers) CreateAccount(c *api.Call) (any, error) {
	return api.Command(c, func(ctx context.Context, caller principal.Caller, in accountInput) (*identityv1.ServiceAccount, error) {
		return h.App.CreateServiceAccount(ctx, caller, in.Name)
	}, func(a *identityv1.ServiceAccount) map[string]string {
		return map[string]string{"service-account-user-id": a.GetUserId()}
	})
}

type accountView struct {
	ServiceAccountUserID string    `json:"service_account_user_id"`
	Name                 string    `json:"name"`
	CreatedAtUnix        int64     `json:"created_at_unix"`
	APIKeys              []keyView `json:"api-keys"`
}

type keyView struct {
	Name                 string   `json:"name"`
	Hint                 string   `json:"hint"`
	KeyID                string   `json:"key_id"`
	ServiceAccountUserID string   `json:"service_account_user_id"`
	CreatedAtUnix        int64    `json:"created_at_unix"`
	IsDisabled           bool     `json:"is_disabled"`
	Permissions          []string `json:"permissions"`
	HashedXiAPIKey       string   `json:"hashed_xi_api_key"`
	AllowedIPs           []string `json:"allowed_ips"`
	ExpiresAtUnix        *int64   `json:"expires_at_unix"`
	RateLimitPerMinute   *int64   `json:"rate_limit_per_minute"`
	RateLimitPerHour     *int64   `json:"rate_limit_per_hour"`
}

func viewOfKey(k app.KeyDoc) keyView {
	v := keyView{
		Name: k.Name, Hint: k.Hint, KeyID: k.ID, ServiceAccountUserID: k.ServiceAccountUserID,
		CreatedAtUnix: k.CreatedAtUnix, IsDisabled: k.IsDisabled, Permissions: k.Permissions,
		HashedXiAPIKey: k.HashedKey, AllowedIPs: k.AllowedIPs, ExpiresAtUnix: k.ExpiresAtUnix,
		RateLimitPerMinute: k.RateLimitPerMinute, RateLimitPerHour: k.RateLimitPerHour,
	}
	if v.AllowedIPs == nil {
		v.AllowedIPs = []string{}
	}
	return v
}

func (h *Handlers) ListAccounts(c *api.Call) (any, error) {
	ws := c.Caller().WorkspaceID
	accts, err := h.App.ReadModel.ListAccounts(c.Context(), ws)
	if err != nil {
		return nil, err
	}
	keys, err := h.App.ReadModel.ListKeys(c.Context(), ws, "")
	if err != nil {
		return nil, err
	}
	byAccount := map[string][]keyView{}
	for _, k := range keys {
		byAccount[k.ServiceAccountUserID] = append(byAccount[k.ServiceAccountUserID], viewOfKey(k))
	}
	out := make([]accountView, 0, len(accts))
	for _, a := range accts {
		ks := byAccount[a.ID]
		if ks == nil {
			ks = []keyView{}
		}
		out = append(out, accountView{ServiceAccountUserID: a.ID, Name: a.Name, CreatedAtUnix: a.CreatedAtUnix, APIKeys: ks})
	}
	return map[string]any{"service-accounts": out}, nil
}

func (h *Handlers) ListKeys(c *api.Call) (any, error) {
	ws, accountID := c.Caller().WorkspaceID, c.PathID("user_id")
	if _, err := h.App.Account(c.Context(), ws, accountID); err != nil {
		return nil, err
	}
	keys, err := h.App.ReadModel.ListKeys(c.Context(), ws, accountID)
	if err != nil {
		return nil, err
	}
	out := make([]keyView, 0, len(keys))
	for _, k := range keys {
		out = append(out, viewOfKey(k))
	}
	return map[string]any{"api-keys": out}, nil
}

// permissionsField is "all" or a list of permission names.
type permissionsField []string

func (p *permissionsField) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		if s != noUpdate {
			*p = []string{s}
		}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return &json.UnmarshalTypeError{Value: string(b), Type: typeOfStrings}
	}
	*p = list
	return nil
}

// noUpdate is the SDK's literal for "leave this field as it is".
const noUpdate = "no_update"

// optionalBool is a boolean, or "no_update" meaning absent.
type optionalBool struct{ v *bool }

func (o *optionalBool) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil && s == noUpdate {
		return nil
	}
	var v *bool
	if err := json.Unmarshal(b, &v); err != nil {
		return &json.UnmarshalTypeError{Value: string(b), Type: reflect.TypeOf(true)}
	}
	o.v = v
	return nil
}

// allowedIPsField is a list of IPs/CIDRs or the literal "clear".
type allowedIPsField struct {
	clear bool
	ips   []string
	set   bool
}

func (a *allowedIPsField) UnmarshalJSON(b []byte) error {
	a.set = true
	if string(b) == "null" {
		a.set = false
		return nil
	}
	var s string
	if json.Unmarshal(b, &s) == nil {
		switch s {
		case "clear":
			a.clear = true
			return nil
		case noUpdate:
			a.set = false
			return nil
		}
	}
	if err := json.Unmarshal(b, &a.ips); err != nil {
		return &json.UnmarshalTypeError{Value: string(b), Type: typeOfStrings}
	}
	if a.ips == nil {
		a.ips = []string{}
	}
	return nil
}

func (h *Handlers) CreateKey(c *api.Call) (any, error) {
	var body struct {
		Name               string           `json:"name"`
		Permissions        permissionsField `json:"permissions"`
		AllowedIPs         []string         `json:"allowed_ips"`
		ExpiresAtUnix      *int64           `json:"expires_at_unix"`
		RateLimitPerMinute *int64           `json:"rate_limit_per_minute"`
		RateLimitPerHour   *int64           `json:"rate_limit_per_hour"`
	}
	if err := c.Body(&body); err != nil {
		return nil, err
	}
	spec := app.KeySpec{
		Name: body.Name, Permissions: body.Permissions, AllowedIPs: body.AllowedIPs, ExpiresAtUnix: body.ExpiresAtUnix,
		RateLimitPerMinute: body.RateLimitPerMinute, RateLimitPerHour: body.RateLimitPerHour,
	}
	secret, key, err := h.App.CreateKey(c.Context(), c.Caller(), c.PathID("user_id"), spec)
	if err != nil {
		return nil, err
	}
	return map[string]string{"xi-api-key": secret, "key_id": key.GetKeyId()}, nil
}

func (h *Handlers) UpdateKey(c *api.Call) (any, error) {
	var body struct {
		Name               *string          `json:"name"`
		IsEnabled          optionalBool     `json:"is_enabled"`
		IsDisabled         optionalBool     `json:"is_disabled"`
		Permissions        permissionsField `json:"permissions"`
		AllowedIPs         allowedIPsField  `json:"allowed_ips"`
		RateLimitPerMinute *int64           `json:"rate_limit_per_minute"`
		RateLimitPerHour   *int64           `json:"rate_limit_per_hour"`
	}
	if err := c.Body(&body); err != nil {
		return nil, err
	}
	patch := app.KeyPatch{
		Name: body.Name, IsDisabled: body.IsDisabled.v, Permissions: body.Permissions,
		ClearAllowedIPs: body.AllowedIPs.clear, RateLimitPerMinute: body.RateLimitPerMinute, RateLimitPerHour: body.RateLimitPerHour,
	}
	if body.AllowedIPs.set && !body.AllowedIPs.clear {
		patch.AllowedIPs = body.AllowedIPs.ips
	}
	if body.IsEnabled.v != nil {
		disabled := !*body.IsEnabled.v
		if body.IsDisabled.v != nil && *body.IsDisabled.v != disabled {
			return nil, apperr.ValidationErrors{{Loc: []any{"body", "is_enabled"}, Msg: "is_enabled and is_disabled contradict each other", Type: "value_error"}}
		}
		patch.IsDisabled = &disabled
	}
	key, err := h.App.UpdateKey(c.Context(), c.Caller(), c.PathID("user_id"), c.PathID("key_id"), patch)
	if err != nil {
		return nil, err
	}
	return viewOfKey(app.KeyDocOf(key)), nil
}

func (h *Handlers) RevokeKey(c *api.Call) (any, error) {
	if err := h.App.RevokeKey(c.Context(), c.Caller(), c.PathID("user_id"), c.PathID("key_id")); err != nil {
		return nil, err
	}
	return map[string]any{"key_id": c.PathID("key_id"), "revoked": true}, nil
}

var typeOfStrings = reflect.TypeOf([]string{})

// memberView is a member as the official SDK's workspace.members.list
// reads it, and beyond it (schema Member).
type memberView struct {
	UserID           string `json:"user_id"`
	Email            string `json:"email"`
	FirstName        string `json:"first_name"`
	SeatType         string `json:"seat_type"`
	IsOwner          bool   `json:"is_owner"`
	IsLocked         bool   `json:"is_locked"`
	Role             string `json:"role"`
	IsServiceAccount bool   `json:"is_service_account"`
	CreatedAtUnix    int64  `json:"created_at_unix"`
}

// The seats of the SDK, and the roles they are here.
var seatOfRole = map[string]string{app.RoleAdmin: "workspace_admin", app.RoleMember: "workspace_member"}

func roleOfSeat(seat string) string {
	for role, s := range seatOfRole {
		if s == seat {
			return role
		}
	}
	return ""
}

// ListMembers lists the workspace's people and, flagged, its service
// accounts: everyone a ticket can be assigned to. (api.Handle checks the
// caller's permission, of the operation, before any handler here runs.)
func (h *Handlers) ListMembers(c *api.Call) (any, error) {
	ws := c.Caller().WorkspaceID
	users, err := h.App.ReadModel.ListUsers(c.Context(), ws)
	if err != nil {
		return nil, err
	}
	accts, err := h.App.ReadModel.ListAccounts(c.Context(), ws)
	if err != nil {
		return nil, err
	}
	out := make([]memberView, 0, len(users)+len(accts))
	for _, u := range users {
		out = append(out, memberView{UserID: u.ID, Email: u.Email, FirstName: u.FirstName, SeatType: seatOfRole[u.Role], IsOwner: u.Owner,
			IsLocked: u.Locked, Role: u.Role, CreatedAtUnix: u.CreatedAtUnix})
	}
	for _, a := range accts {
		out = append(out, memberView{UserID: a.ID, Email: a.Email, FirstName: a.Name, SeatType: seatOfRole[app.RoleMember], Role: app.RoleMember,
			IsServiceAccount: true, CreatedAtUnix: a.CreatedAtUnix})
	}
	return out, nil
}

// memberInvite is the SDK's workspace.invites.create body (schema
// MemberInvite: the fields this platform has no use for must be absent).
type memberInvite struct {
	Email     string `json:"email"`
	SeatType  string `json:"seat_type"`
	FirstName string `json:"first_name"`
}

// AddMember makes the invited person a member at once: a self-hosted
// platform sends no invitation to accept.
func (h *Handlers) AddMember(c *api.Call) (any, error) {
	return api.Command(c, func(ctx context.Context, caller principal.Caller, in memberInvite) (*identityv1.User, error) {
		return h.App.AddUser(ctx, caller, app.NewMember{Email: in.Email, FirstName: in.FirstName, Role: roleOfSeat(in.SeatType)})
	}, func(u *identityv1.User) map[string]string {
		return map[string]string{"status": "ok", "user_id": u.GetUserId()}
	})
}

// memberUpdate is the SDK's workspace.members.update body.
type memberUpdate struct {
	Email    string  `json:"email"`
	IsLocked *bool   `json:"is_locked"`
	SeatType *string `json:"workspace_seat_type"`
	Role     *string `json:"workspace_role"` // the SDK's older name of the seat
}

// UpdateMember changes a member's seat or lock.
func (h *Handlers) UpdateMember(c *api.Call) (any, error) {
	return api.Command(c, func(ctx context.Context, caller principal.Caller, in memberUpdate) (*identityv1.User, error) {
		change := app.MemberChange{Locked: in.IsLocked}
		if seat := cmp.Or(in.SeatType, in.Role); seat != nil {
			role := roleOfSeat(*seat)
			change.Role = &role
		}
		return h.App.UpdateUser(ctx, caller, in.Email, change)
	}, func(*identityv1.User) map[string]string { return map[string]string{"status": "ok"} })
}
