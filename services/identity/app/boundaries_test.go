package app_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/identity/app"
	"github.com/voiceai-platform/voiceai/services/identity/domain"
)

// Rules at the edges of a workspace and of an account: what a keyed
// replay answers through another path, what an operator may create, what
// a change of the configured admin key may revoke.

// newKey mints a convai_read key for account as the fixture's admin.
func (f *fixture) newKey(t *testing.T, account string) string {
	t.Helper()
	_, key, err := f.app.CreateKey(context.Background(), principal.Caller{Principal: f.admin}, account, app.KeySpec{Name: "k", Permissions: []string{"convai_read"}})
	if err != nil {
		t.Fatal(err)
	}
	return key.KeyId
}

// newAccount adds a service account to ws_a.
func (f *fixture) newAccount(t *testing.T, name string) string {
	t.Helper()
	acct, err := f.app.CreateServiceAccount(context.Background(), principal.In("ws_a"), name)
	if err != nil {
		t.Fatal(err)
	}
	return acct.UserId
}

// A key is reached only through its own account's path: a revocation
// through another account's is a 404 that leaves the key live, and a
// keyed replay (the same Idempotency-Key, so the same command id) through
// another account's path is a 404 too, never the key.
func TestKeyThroughAnotherAccountIsNotFound(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	other := f.newAccount(t, "other")
	key := f.newKey(t, f.acct)

	caller := principal.Caller{Principal: f.admin, CommandID: "patch-1"}
	if _, err := f.app.UpdateKey(ctx, caller, f.acct, key, app.KeyPatch{Name: ptr("renamed")}); err != nil {
		t.Fatal(err)
	}
	got, err := f.app.UpdateKey(ctx, caller, other, key, app.KeyPatch{Name: ptr("renamed")})
	wantKind(t, err, apperr.NotFound, "a replayed patch through another account's path")
	if got != nil {
		t.Fatalf("the replay answered the key through another account: %v", got)
	}

	wantKind(t, f.app.RevokeKey(ctx, principal.Caller{Principal: f.admin}, other, key), apperr.NotFound, "a revocation through another account's path")
	f.listedKey(t, key) // still live

	caller.CommandID = "revoke-1"
	if err := f.app.RevokeKey(ctx, caller, f.acct, key); err != nil {
		t.Fatal(err)
	}
	wantKind(t, f.app.RevokeKey(ctx, caller, other, key), apperr.NotFound, "a replayed revocation through another account's path")
}

// A service account is read within its workspace only.
func TestAccountIsReadInItsWorkspaceOnly(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if acct, err := f.app.Account(ctx, "ws_a", f.acct); err != nil || acct.GetUserId() != f.acct {
		t.Fatalf("own workspace: %v %v", acct, err)
	}
	if _, err := f.app.CreateWorkspace(ctx, "ws_b", "B"); err != nil {
		t.Fatal(err)
	}
	_, err := f.app.Account(ctx, "ws_b", f.acct)
	wantKind(t, err, apperr.NotFound, "another workspace's account")
}

// A service account's name is trimmed and may not be white space only
// (the schema's \S is ASCII's); a keyed retry answers the account its
// first attempt created, not one made of the retry's body.
func TestServiceAccountCreation(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, err := f.app.CreateServiceAccount(ctx, principal.In("ws_a"), "\u00a0\u2003")
	wantKind(t, err, apperr.Invalid, "a name of white space only")

	caller := principal.Caller{Principal: principal.Principal{WorkspaceID: "ws_a"}, CommandID: "sa-1"}
	first, err := f.app.CreateServiceAccount(ctx, caller, "bot")
	if err != nil {
		t.Fatal(err)
	}
	f.clock = f.clock.Add(time.Minute)
	again, err := f.app.CreateServiceAccount(ctx, caller, "another body")
	if err != nil || again.UserId != first.UserId || again.Name != "bot" || again.CreatedAtUnix != first.CreatedAtUnix {
		t.Fatalf("a retried create answers the first account %+v: %+v %v", first, again, err)
	}
	accts, _ := f.app.ReadModel.ListAccounts(ctx, "ws_a")
	if n := len(slices.DeleteFunc(accts, func(a app.AccountDoc) bool { return a.Name != "bot" })); n != 1 {
		t.Fatalf("%d accounts named bot after a retried create", n)
	}
}

// An Idempotency-Key first used by another command does not add a member:
// the add is a 409, and no member is listed.
func TestMemberAddWithAKeyFirstUsedElsewhere(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	caller := principal.Caller{Principal: principal.Principal{WorkspaceID: "ws_a"}, CommandID: "reused"}
	if _, err := f.app.CreateServiceAccount(ctx, caller, "bot"); err != nil {
		t.Fatal(err)
	}
	u, err := f.app.AddUser(ctx, caller, app.NewMember{Email: "ada@example.com", FirstName: "Ada"})
	wantKind(t, err, apperr.Conflict, "an add under a key another command used")
	if u != nil {
		t.Fatalf("answered a member: %v", u)
	}
	if users, _ := f.app.ReadModel.ListUsers(ctx, "ws_a"); len(users) != 0 {
		t.Fatalf("members listed: %v", users)
	}
}

// A patch is checked as a whole: a blank name or an address that does not
// parse is a 422 that changes nothing, a patch may grant what its editor
// holds, addresses are normalised, and both rate limits are set.
func TestKeyPatchRules(t *testing.T) {
	editor := principal.Principal{WorkspaceID: "ws_a", Permissions: []string{"convai_read", "convai_write", "service_account_write"}}
	for _, tc := range []struct {
		name    string
		patch   app.KeyPatch
		invalid string // the field of the 422, "" for none
		check   func(k keyView) bool
	}{
		{name: "blank name", patch: app.KeyPatch{Name: ptr("\u2003"), IsDisabled: ptr(true)}, invalid: "name"},
		{name: "bad address", patch: app.KeyPatch{AllowedIPs: []string{"10.0.0.1", "nope"}, IsDisabled: ptr(true)}, invalid: "allowed_ips"},
		{name: "addresses", patch: app.KeyPatch{AllowedIPs: []string{"10.0.0.1", "2001:db8::/32"}},
			check: func(k keyView) bool { return slices.Equal(k.ips, []string{"10.0.0.1/32", "2001:db8::/32"}) }},
		{name: "held permissions", patch: app.KeyPatch{Permissions: []string{"convai_write", "convai_read"}},
			check: func(k keyView) bool { return slices.Equal(k.perms, []string{"convai_read", "convai_write"}) }},
		{name: "rate limits", patch: app.KeyPatch{RateLimitPerMinute: ptr(int64(10)), RateLimitPerHour: ptr(int64(100))},
			check: func(k keyView) bool { return k.perMinute == 10 && k.perHour == 100 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			key := f.newKey(t, f.acct)
			got, err := f.app.UpdateKey(ctx, principal.Caller{Principal: editor}, f.acct, key, tc.patch)
			if tc.invalid != "" {
				wantKind(t, err, apperr.Invalid, tc.name)
				var ve apperr.ValidationErrors
				if !errors.As(err, &ve) || len(ve) != 1 || ve[0].Loc[1] != tc.invalid {
					t.Fatalf("want one error on %s: %v", tc.invalid, err)
				}
				if listed := f.listedKey(t, key); listed.IsDisabled || listed.Name != "k" {
					t.Fatalf("an invalid patch changed the key: %+v", listed)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			view := keyView{ips: got.AllowedIps, perms: got.Permissions, perMinute: got.GetRateLimitPerMinute(), perHour: got.GetRateLimitPerHour()}
			if !tc.check(view) {
				t.Fatalf("patched: %+v", view)
			}
		})
	}
}

type keyView struct {
	ips, perms         []string
	perMinute, perHour int64
}

// listedKey is key as the read model lists it in ws_a.
func (f *fixture) listedKey(t *testing.T, key string) app.KeyDoc {
	t.Helper()
	keys, err := f.app.ReadModel.ListKeys(context.Background(), "ws_a", f.acct)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if k.ID == key {
			return k
		}
	}
	t.Fatalf("key %s not listed", key)
	return app.KeyDoc{}
}

// The operator's create-workspace refuses an id that exists (it would
// mint an all-permissions key into another tenant) or that is no subject
// token; without an id it derives one.
func TestCreateWorkspaceRules(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.app.Bootstrap(ctx, "", t.TempDir()); err != nil {
		t.Fatal(err)
	}
	before := f.adminKeys(t)
	for _, id := range []string{domain.DefaultWorkspaceID, "ws_a"} {
		if ws, err := f.app.CreateWorkspace(ctx, id, "again"); err == nil || !strings.Contains(err.Error(), "already exists") || ws.Secret != "" {
			t.Fatalf("re-creating %s: %+v %v", id, ws, err)
		}
	}
	if after := f.adminKeys(t); !slices.Equal(before, after) {
		t.Fatalf("re-creating the default workspace minted a key: %v -> %v", before, after)
	}
	for _, id := range []string{"ws.b", "*", "ws b"} {
		if _, err := f.app.CreateWorkspace(ctx, id, "bad"); err == nil {
			t.Fatalf("workspace id %q accepted", id)
		}
	}
	ws, err := f.app.CreateWorkspace(ctx, "", "Named")
	if err != nil || !strings.HasPrefix(ws.WorkspaceID, "ws_") || ws.Secret == "" {
		t.Fatalf("a derived id: %+v %v", ws, err)
	}
	if _, err := f.app.Account(ctx, ws.WorkspaceID, ws.AdminAccountID); err != nil {
		t.Fatalf("the new workspace's admin account: %v", err)
	}
}

// A new configured admin key revokes only keys of earlier configured
// values: keys made through the API on the admin account stay live.
func TestConfiguredKeyChangeLeavesOtherKeysAlone(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.app.Bootstrap(ctx, domain.NewSecret(), t.TempDir()); err != nil {
		t.Fatal(err)
	}
	admin := principal.Principal{WorkspaceID: domain.DefaultWorkspaceID, UserID: domain.AdminAccountID, Permissions: []string{principal.PermissionAll}}
	_, made, err := f.app.CreateKey(ctx, principal.Caller{Principal: admin}, domain.AdminAccountID, app.KeySpec{Name: "made", Permissions: []string{"convai_read"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.app.Bootstrap(ctx, domain.NewSecret(), t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if ids := f.adminKeys(t); len(ids) != 2 || !slices.Contains(ids, made.KeyId) {
		t.Fatalf("want the new configured key and %s: %v", made.KeyId, ids)
	}
}

// readModel is a read model that fails every Put (fail), or that lags
// revocations: it never hears of a revoked key.
type readModel struct {
	app.ReadModel
	fail, lagRevocations bool
}

func (r readModel) Put(ctx context.Context, seq uint64, doc app.Doc) error {
	if r.fail {
		return errors.New("read model down")
	}
	if k, ok := doc.(app.KeyDoc); ok && k.Revoked && r.lagRevocations {
		return nil
	}
	return r.ReadModel.Put(ctx, seq, doc)
}

// A command stored in the log succeeds even when the read model cannot
// be written inline: the stream catches it up, and a retry would only be
// told the command was done.
func TestCommandOutlivesAReadModelFailure(t *testing.T) {
	f := newFixture(t)
	f.app.ReadModel = readModel{ReadModel: f.app.ReadModel, fail: true}
	ctx := context.Background()
	acct, err := f.app.CreateServiceAccount(ctx, principal.In("ws_a"), "bot")
	if err != nil {
		t.Fatalf("a stored command answered %v", err)
	}
	if _, err := f.app.Account(ctx, "ws_a", acct.UserId); err != nil {
		t.Fatalf("the stored account: %v", err)
	}
}

// A start whose read model still lists a configured key already revoked
// starts all the same, leaving the revocation as it was.
func TestConfiguredKeyChangeWithALaggingReadModel(t *testing.T) {
	f := newFixture(t)
	f.app.ReadModel = readModel{ReadModel: f.app.ReadModel, lagRevocations: true}
	ctx := context.Background()
	for i := range 3 {
		if _, err := f.app.Bootstrap(ctx, domain.NewSecret(), t.TempDir()); err != nil {
			t.Fatalf("start %d: %v", i+1, err)
		}
	}
}

// A key may change or revoke only a key that holds no more than it does.
// Before, the grant was checked only when the permissions changed: a key
// with service_account_write alone could enable a disabled admin key,
// lift its IP restriction and rate limits, and use it (or revoke it).
func TestAWeakerKeyCannotChangeOrRevokeAStrongerOne(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	admin := principal.Caller{Principal: f.admin}
	_, strong, err := f.app.CreateKey(ctx, admin, f.acct, app.KeySpec{Name: "ops", Permissions: []string{"all"}, AllowedIPs: []string{"10.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.app.UpdateKey(ctx, admin, f.acct, strong.KeyId, app.KeyPatch{IsDisabled: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	_, weakKey, err := f.app.CreateKey(ctx, admin, f.acct, app.KeySpec{Name: "ci", Permissions: []string{"service_account_write"}})
	if err != nil {
		t.Fatal(err)
	}
	weak := principal.Caller{Principal: principal.Principal{WorkspaceID: "ws_a", UserID: f.acct, Permissions: []string{"service_account_write"}}}
	_, err = f.app.UpdateKey(ctx, weak, f.acct, strong.KeyId, app.KeyPatch{IsDisabled: ptr(false), ClearAllowedIPs: true, RateLimitPerMinute: ptr(int64(1_000_000))})
	if !errors.Is(err, apperr.PermissionEscalation) {
		t.Fatalf("a weaker key enabling and unlocking an admin key: %v; want permission_escalation", err)
	}
	if err := f.app.RevokeKey(ctx, weak, f.acct, strong.KeyId); !errors.Is(err, apperr.PermissionEscalation) {
		t.Fatalf("a weaker key revoking an admin key: %v; want permission_escalation", err)
	}
	// A key it may hold is its to change: itself, renamed.
	if _, err := f.app.UpdateKey(ctx, weak, f.acct, weakKey.KeyId, app.KeyPatch{Name: ptr("ci-2")}); err != nil {
		t.Fatalf("a key renaming a key of its own strength: %v", err)
	}
}

// A key that is not a workspace admin's passes its own restrictions on:
// it cannot give a key rate limits (admins set those), lift an allow-list,
// or make a key reaching more addresses or living longer than itself (a
// key limited to one address for two minutes made itself a copy with
// neither limit, and lifted its own).
func TestAKeyPassesItsRestrictionsOn(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	admin := principal.Caller{Principal: f.admin}
	expires := f.clock.Add(2 * time.Minute).Unix()
	perms := []string{"service_account_write", "convai_read"}
	_, limited, err := f.app.CreateKey(ctx, admin, f.acct, app.KeySpec{Name: "limited", Permissions: perms,
		AllowedIPs: []string{"127.0.0.1"}, ExpiresAtUnix: &expires, RateLimitPerMinute: ptr(int64(10))})
	if err != nil {
		t.Fatal(err)
	}
	self := principal.Caller{Principal: principal.Principal{WorkspaceID: "ws_a", UserID: f.acct, KeyID: limited.KeyId, Permissions: perms}}

	_, _, err = f.app.CreateKey(ctx, self, f.acct, app.KeySpec{Name: "fast", Permissions: perms, RateLimitPerMinute: ptr(int64(1_000_000))})
	wantKind(t, err, apperr.Forbidden, "a non-admin key giving rate limits")
	for name, spec := range map[string]app.KeySpec{
		"wider addresses": {Name: "wide", Permissions: perms, AllowedIPs: []string{"10.0.0.0/8"}},
		"a later expiry":  {Name: "late", Permissions: perms, ExpiresAtUnix: ptr(expires + 3600)},
	} {
		if _, _, err := f.app.CreateKey(ctx, self, f.acct, spec); apperr.KindOf(err) != apperr.Invalid {
			t.Errorf("a key made with %s: %v, want 422", name, err)
		}
	}
	_, copied, err := f.app.CreateKey(ctx, self, f.acct, app.KeySpec{Name: "copy", Permissions: perms})
	if err != nil || !slices.Equal(copied.AllowedIps, []string{"127.0.0.1/32"}) || copied.GetExpiresAtUnix() != expires {
		t.Fatalf("a key made without limits: %+v %v; want the maker's allow-list and expiry", copied, err)
	}

	for name, patch := range map[string]app.KeyPatch{
		"its allow-list lifted":  {ClearAllowedIPs: true},
		"its rate limits raised": {RateLimitPerMinute: ptr(int64(1_000_000))},
	} {
		if _, err := f.app.UpdateKey(ctx, self, f.acct, limited.KeyId, patch); apperr.KindOf(err) != apperr.Forbidden {
			t.Errorf("%s by itself: %v, want 403", name, err)
		}
	}
	if _, err := f.app.UpdateKey(ctx, self, f.acct, limited.KeyId, app.KeyPatch{AllowedIPs: []string{"127.0.0.2"}}); apperr.KindOf(err) != apperr.Invalid {
		t.Errorf("its allow-list moved elsewhere by itself: %v, want 422", err)
	}
	if _, err := f.app.UpdateKey(ctx, self, f.acct, copied.KeyId, app.KeyPatch{Name: ptr("copy-2")}); err != nil {
		t.Errorf("a rename: %v", err)
	}
	// A workspace admin sets all of it.
	if _, err := f.app.UpdateKey(ctx, admin, f.acct, limited.KeyId, app.KeyPatch{ClearAllowedIPs: true, RateLimitPerMinute: ptr(int64(50))}); err != nil {
		t.Fatalf("the admin: %v", err)
	}
}

// Inviting a person straight into the admin seat is the seat change that
// needs workspace_write: a key that may only invite cannot; an admin can.
func TestOnlyAnAdminSeatsAnAdmin(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	inviter := principal.Caller{Principal: principal.Principal{WorkspaceID: "ws_a", UserID: f.acct, KeyID: "key_inviter", Permissions: []string{"workspace_members_invite"}}}
	_, err := f.app.AddUser(ctx, inviter, app.NewMember{Email: "boss@example.com", Role: app.RoleAdmin})
	wantKind(t, err, apperr.Forbidden, "an inviting key seating an admin")
	if _, err := f.app.AddUser(ctx, inviter, app.NewMember{Email: "boss@example.com"}); err != nil {
		t.Fatalf("an inviting key adding a member: %v", err)
	}
	if _, err := f.app.AddUser(ctx, principal.Caller{Principal: f.admin}, app.NewMember{Email: "chief@example.com", Role: app.RoleAdmin}); err != nil {
		t.Fatalf("an admin seating an admin: %v", err)
	}
}
