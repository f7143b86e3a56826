package app_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/eventlog/memlog"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/identity/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/identity/app"
	"github.com/voiceai-platform/voiceai/services/identity/domain"
)

// The key rules, on the in-memory event log and read model: no NATS, no
// store.

type fixture struct {
	app   *app.App
	clock time.Time
	admin principal.Principal
	acct  string // a service account of the admin's workspace
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{clock: time.Unix(1_800_000_000, 0)}
	f.app = app.New(memlog.New(), memory.NewReadModel(), slog.New(slog.DiscardHandler),
		func() time.Time { return f.clock })
	ctx := context.Background()
	ws, err := f.app.CreateWorkspace(ctx, "ws_a", "A")
	if err != nil {
		t.Fatal(err)
	}
	f.admin = principal.Principal{WorkspaceID: ws.WorkspaceID, UserID: ws.AdminAccountID, Permissions: []string{principal.PermissionAll}}
	acct, err := f.app.CreateServiceAccount(ctx, principal.In("ws_a"), "  ci  ")
	if err != nil || acct.Name != "ci" {
		t.Fatalf("account: %+v %v", acct, err)
	}
	f.acct = acct.UserId
	return f
}

var wantKind = testkit.WantKind

func ptr[T any](v T) *T { return &v }

func TestKeyCreation(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	secret, key, err := f.app.CreateKey(ctx, principal.Caller{Principal: f.admin}, f.acct, app.KeySpec{Name: "ci key", Permissions: []string{"convai_read", "convai_write", "convai_read"},
		AllowedIPs: []string{"10.0.0.1", "10.1.0.0/16"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, domain.SecretPrefix) || !bytes.Equal(key.SecretSha256, domain.HashSecret(secret)) || strings.Contains(key.String(), secret) {
		t.Fatal("the secret is answered once and only its hash is stored")
	}
	if !slices.Equal(key.Permissions, []string{"convai_read", "convai_write"}) || !slices.Equal(key.AllowedIps, []string{"10.0.0.1/32", "10.1.0.0/16"}) {
		t.Fatalf("normalised spec: %v %v", key.Permissions, key.AllowedIps)
	}
	keys, err := f.app.ReadModel.ListKeys(ctx, "ws_a", f.acct)
	if err != nil || len(keys) != 1 {
		t.Fatalf("listed: %d %v", len(keys), err)
	}

	past, far := f.clock.Add(-time.Second).Unix(), f.clock.Add(app.MaxKeyLifetime+time.Hour).Unix()
	_, _, err = f.app.CreateKey(ctx, principal.Caller{Principal: f.admin}, f.acct, app.KeySpec{Name: "k", Permissions: []string{"convai_read"}, ExpiresAtUnix: &past})
	wantKind(t, err, apperr.Invalid, "an expiry in the past")
	_, _, err = f.app.CreateKey(ctx, principal.Caller{Principal: f.admin}, f.acct, app.KeySpec{Name: "k", Permissions: []string{"convai_read"}, ExpiresAtUnix: &far})
	wantKind(t, err, apperr.Invalid, "an expiry past ten years")
	_, _, err = f.app.CreateKey(ctx, principal.Caller{Principal: f.admin}, f.acct, app.KeySpec{Name: "\u00a0\u2003", Permissions: []string{"convai_read"}})
	wantKind(t, err, apperr.Invalid, "a name of white space only")
	_, _, err = f.app.CreateKey(ctx, principal.Caller{Principal: f.admin}, f.acct, app.KeySpec{Name: "k", Permissions: []string{"convai_read"}, AllowedIPs: []string{"10.0.0.300"}})
	wantKind(t, err, apperr.Invalid, "an address that does not parse")
	_, _, err = f.app.CreateKey(ctx, principal.Caller{Principal: f.admin}, "sa_nobody", app.KeySpec{Name: "k", Permissions: []string{"convai_read"}})
	wantKind(t, err, apperr.NotFound, "a key for an unknown account")

	reader := principal.Principal{WorkspaceID: "ws_a", UserID: f.acct, Permissions: []string{"convai_read", "service_account_write"}}
	_, _, err = f.app.CreateKey(ctx, principal.Caller{Principal: reader}, f.acct, app.KeySpec{Name: "k", Permissions: []string{"convai_write"}})
	wantKind(t, err, apperr.Forbidden, "a key with more than its maker holds")
	other := principal.Principal{WorkspaceID: "ws_b", UserID: "sa_admin", Permissions: []string{principal.PermissionAll}}
	_, _, err = f.app.CreateKey(ctx, principal.Caller{Principal: other}, f.acct, app.KeySpec{Name: "k", Permissions: []string{"convai_read"}})
	wantKind(t, err, apperr.NotFound, "a key for another workspace's account")
}

// A retried keyed create names the same key and cannot show its secret
// again: a 409 saying so, and one key.
func TestRetriedKeyCreate(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	spec := app.KeySpec{Name: "k", Permissions: []string{"convai_read"}}
	_, first, err := f.app.CreateKey(ctx, principal.Caller{Principal: f.admin, CommandID: "key-1"}, f.acct, spec)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = f.app.CreateKey(ctx, principal.Caller{Principal: f.admin, CommandID: "key-1"}, f.acct, spec)
	wantKind(t, err, apperr.Conflict, "a retried create")
	if !strings.Contains(err.Error(), first.KeyId) {
		t.Fatalf("the answer names the key created: %v", err)
	}
	if keys, _ := f.app.ReadModel.ListKeys(ctx, "ws_a", f.acct); len(keys) != 1 {
		t.Fatalf("%d keys after a retried create", len(keys))
	}
}

func TestKeyPatch(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, key, err := f.app.CreateKey(ctx, principal.Caller{Principal: f.admin}, f.acct, app.KeySpec{Name: "k", Permissions: []string{"convai_read"}, AllowedIPs: []string{"10.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.app.UpdateKey(ctx, principal.Caller{Principal: f.admin, CommandID: "patch-1"}, f.acct, key.KeyId, app.KeyPatch{Name: ptr(" renamed "), IsDisabled: ptr(true), ClearAllowedIPs: true,
		RateLimitPerMinute: ptr(int64(60))})
	if err != nil || got.Name != "renamed" || !got.IsDisabled || len(got.AllowedIps) != 0 || got.GetRateLimitPerMinute() != 60 {
		t.Fatalf("patch: %+v %v", got, err)
	}
	replay, err := f.app.UpdateKey(ctx, principal.Caller{Principal: f.admin, CommandID: "patch-1"}, f.acct, key.KeyId, app.KeyPatch{Name: ptr("another body")})
	if err != nil || replay.Name != "renamed" {
		t.Fatalf("a replayed patch applied its own body: %q %v", replay.GetName(), err)
	}
	reader := principal.Principal{WorkspaceID: "ws_a", UserID: f.acct, Permissions: []string{"convai_read", "service_account_write"}}
	_, err = f.app.UpdateKey(ctx, principal.Caller{Principal: reader}, f.acct, key.KeyId, app.KeyPatch{Permissions: []string{"all"}})
	wantKind(t, err, apperr.Forbidden, "patching in more than the editor holds")
	_, err = f.app.UpdateKey(ctx, principal.Caller{Principal: f.admin}, "sa_other", key.KeyId, app.KeyPatch{Name: ptr("x")})
	wantKind(t, err, apperr.NotFound, "a key through another account's path")
}

func TestKeyRevocation(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, key, err := f.app.CreateKey(ctx, principal.Caller{Principal: f.admin}, f.acct, app.KeySpec{Name: "k", Permissions: []string{"convai_read"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.app.RevokeKey(ctx, principal.Caller{Principal: f.admin, CommandID: "revoke-1"}, f.acct, key.KeyId); err != nil {
		t.Fatal(err)
	}
	if err := f.app.RevokeKey(ctx, principal.Caller{Principal: f.admin, CommandID: "revoke-1"}, f.acct, key.KeyId); err != nil {
		t.Fatalf("a replayed revocation answers as the first did: %v", err)
	}
	wantKind(t, f.app.RevokeKey(ctx, principal.Caller{Principal: f.admin}, f.acct, key.KeyId), apperr.NotFound, "revoking a revoked key anew")
	_, err = f.app.UpdateKey(ctx, principal.Caller{Principal: f.admin}, f.acct, key.KeyId, app.KeyPatch{Name: ptr("x")})
	wantKind(t, err, apperr.NotFound, "patching a revoked key")
	if keys, _ := f.app.ReadModel.ListKeys(ctx, "ws_a", f.acct); len(keys) != 0 {
		t.Fatalf("a revoked key is still listed: %d", len(keys))
	}
}

// A workspace holds at most Limits.Keys live keys, whatever
// account holds them: the next create is a 409 and mints nothing, the
// keyed retry of a create that minted is still told so, another workspace
// is not counted, and a revocation makes room.
func TestLiveKeysPerWorkspaceAreBounded(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	live := func(ws string) int {
		t.Helper()
		keys, err := f.app.ReadModel.ListKeys(ctx, ws, "")
		if err != nil {
			t.Fatal(err)
		}
		return len(keys)
	}
	f.app.Limits.Keys = live("ws_a") + 2
	spec := app.KeySpec{Name: "k", Permissions: []string{"convai_read"}}
	_, first, err := f.app.CreateKey(ctx, principal.Caller{Principal: f.admin, CommandID: "key-1"}, f.acct, spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.app.CreateKey(ctx, principal.Caller{Principal: f.admin}, f.admin.UserID, spec); err != nil {
		t.Fatalf("the last key there is room for, on another account: %v", err)
	}
	_, _, err = f.app.CreateKey(ctx, principal.Caller{Principal: f.admin}, f.acct, spec)
	wantKind(t, err, apperr.Conflict, "a key past the bound")
	if !strings.Contains(err.Error(), "workspace_limit_reached") || live("ws_a") != f.app.Limits.Keys {
		t.Fatalf("%v, %d live keys", err, live("ws_a"))
	}
	_, _, err = f.app.CreateKey(ctx, principal.Caller{Principal: f.admin, CommandID: "key-1"}, f.acct, spec)
	if err == nil || !strings.Contains(err.Error(), "api_key_already_created") {
		t.Fatalf("the keyed retry of a create that minted: %v", err)
	}
	if _, err := f.app.CreateWorkspace(ctx, "ws_b", "B"); err != nil {
		t.Fatal(err)
	}
	other := principal.Principal{WorkspaceID: "ws_b", UserID: f.admin.UserID, Permissions: []string{principal.PermissionAll}}
	if _, _, err := f.app.CreateKey(ctx, principal.Caller{Principal: other}, other.UserID, spec); err != nil {
		t.Fatalf("another workspace's key: %v", err)
	}
	if err := f.app.RevokeKey(ctx, principal.Caller{Principal: f.admin}, f.acct, first.KeyId); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.app.CreateKey(ctx, principal.Caller{Principal: f.admin}, f.acct, spec); err != nil {
		t.Fatalf("after a revocation: %v", err)
	}
}

// Service accounts and members are bounded per workspace too (neither can
// be deleted): one more is a 409 and adds nothing; a keyed retry of an
// account create that made it, and an address already a member, are
// answered as before; another workspace is not counted.
func TestAccountsAndMembersPerWorkspaceAreBounded(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	accounts, _ := f.app.ReadModel.ListAccounts(ctx, "ws_a")
	f.app.Limits.Accounts = len(accounts) + 1
	first, err := f.app.CreateServiceAccount(ctx, principal.Caller{Principal: f.admin, CommandID: "acct-1"}, "ops")
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.app.CreateServiceAccount(ctx, principal.Caller{Principal: f.admin}, "one more")
	wantKind(t, err, apperr.Conflict, "an account past the bound")
	if again, err := f.app.CreateServiceAccount(ctx, principal.Caller{Principal: f.admin, CommandID: "acct-1"}, "ops"); err != nil || again.UserId != first.UserId {
		t.Fatalf("the keyed retry of a create that was made: %v %v", again, err)
	}
	if now, _ := f.app.ReadModel.ListAccounts(ctx, "ws_a"); len(now) != f.app.Limits.Accounts {
		t.Fatalf("%d accounts, want %d", len(now), f.app.Limits.Accounts)
	}

	members, _ := f.app.ReadModel.ListUsers(ctx, "ws_a")
	f.app.Limits.Members = len(members) + 1
	if _, err := f.app.AddUser(ctx, principal.Caller{Principal: f.admin}, app.NewMember{Email: "ann@example.com", FirstName: "Ann"}); err != nil {
		t.Fatal(err)
	}
	_, err = f.app.AddUser(ctx, principal.Caller{Principal: f.admin}, app.NewMember{Email: "bob@example.com", FirstName: "Bob"})
	wantKind(t, err, apperr.Conflict, "a member past the bound")
	_, err = f.app.AddUser(ctx, principal.Caller{Principal: f.admin}, app.NewMember{Email: "ANN@example.com", FirstName: "Ann"})
	if err == nil || !strings.Contains(err.Error(), "member_exists") {
		t.Fatalf("an address already a member, at the bound: %v", err)
	}
	if _, err := f.app.CreateWorkspace(ctx, "ws_b", "B"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.app.AddUser(ctx, principal.In("ws_b"), app.NewMember{Email: "bob@example.com", FirstName: "Bob"}); err != nil {
		t.Fatalf("another workspace's member: %v", err)
	}
}

// A member's seat and lock change through UpdateUser, found by its
// address in any case; a change that changes nothing stores nothing, an
// address that is no member is a 404, and the listing shows each change
// at once.
func TestAMembersSeatAndLockChange(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	caller := principal.Caller{Principal: f.admin}
	added, err := f.app.AddUser(ctx, caller, app.NewMember{Email: "ann@example.com", FirstName: "Ann"})
	if err != nil || added.Role != app.RoleMember || added.Locked {
		t.Fatalf("added: %v %v", added, err)
	}
	listed := func() app.UserDoc {
		users, err := f.app.ReadModel.ListUsers(ctx, "ws_a")
		if err != nil || len(users) != 1 {
			t.Fatalf("members: %v %v", users, err)
		}
		return users[0]
	}
	u, err := f.app.UpdateUser(ctx, caller, "ANN@example.com", app.MemberChange{Role: ptr(app.RoleAdmin), Locked: ptr(true)})
	if err != nil || u.Role != app.RoleAdmin || !u.Locked {
		t.Fatalf("update: %v %v", u, err)
	}
	if d := listed(); d.Role != app.RoleAdmin || !d.Locked || d.FirstName != "Ann" {
		t.Fatalf("listed after the update: %+v", d)
	}
	subject, err := events.UserSubject("ws_a", added.UserId)
	if err != nil {
		t.Fatal(err)
	}
	before, _, err := f.app.Store.Last(ctx, subject)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.app.UpdateUser(ctx, caller, "ann@example.com", app.MemberChange{Role: ptr(app.RoleAdmin), Locked: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	if after, _, _ := f.app.Store.Last(ctx, subject); after.Seq != before.Seq {
		t.Fatalf("a change that changes nothing stored an event: %d after %d", after.Seq, before.Seq)
	}
	if _, err := f.app.UpdateUser(ctx, caller, "nobody@example.com", app.MemberChange{Locked: ptr(true)}); !errors.Is(err, apperr.MemberNotFound) {
		t.Fatalf("an address that is no member: %v", err)
	}
	if _, err := f.app.UpdateUser(ctx, principal.In("ws_b"), "ann@example.com", app.MemberChange{Locked: ptr(false)}); !errors.Is(err, apperr.MemberNotFound) {
		t.Fatalf("another workspace's member: %v", err)
	}
	if _, err := f.app.UpdateUser(ctx, caller, "ann@example.com", app.MemberChange{Locked: ptr(false)}); err != nil || listed().Locked {
		t.Fatalf("unlocked: %+v %v", listed(), err)
	}
}
