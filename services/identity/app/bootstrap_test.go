package app_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/services/identity/app"
	"github.com/voiceai-platform/voiceai/services/identity/domain"
)

// keyIDs are the live keys of the default workspace's admin account.
func (f *fixture) adminKeys(t *testing.T) []string {
	t.Helper()
	keys, err := f.app.ReadModel.ListKeys(context.Background(), domain.DefaultWorkspaceID, domain.AdminAccountID)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, k := range keys {
		ids = append(ids, k.ID)
	}
	return ids
}

// Without a configured key, the first start generates one, writes it to
// the data directory and says so once; later starts keep it.
func TestBootstrapGeneratesAKeyOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	dir := t.TempDir()
	first, err := f.app.Bootstrap(ctx, "", dir)
	if err != nil || !strings.HasPrefix(first.GeneratedSecret, domain.SecretPrefix) || first.KeyFile != filepath.Join(dir, app.AdminKeyFile) {
		t.Fatalf("first start: %+v %v", first, err)
	}
	if b, err := os.ReadFile(first.KeyFile); err != nil || strings.TrimSpace(string(b)) != first.GeneratedSecret {
		t.Fatalf("the key file: %q %v", b, err)
	}
	again, err := f.app.Bootstrap(ctx, "", dir)
	if err != nil || again.GeneratedSecret != "" {
		t.Fatalf("a second start generated another key: %+v %v", again, err)
	}
	if ids := f.adminKeys(t); len(ids) != 1 {
		t.Fatalf("admin keys after two starts: %v", ids)
	}
}

// A configured key is the same key on every start; a new value revokes
// the previous one; a generated key is left alone.
func TestBootstrapConfiguredKey(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := f.app.Bootstrap(ctx, "", dir); err != nil { // a generated key first
		t.Fatal(err)
	}
	one, two := domain.NewSecret(), domain.NewSecret()
	for range 2 {
		if res, err := f.app.Bootstrap(ctx, one, dir); err != nil || res.GeneratedSecret != "" {
			t.Fatalf("configured start: %+v %v", res, err)
		}
	}
	afterOne := f.adminKeys(t)
	if len(afterOne) != 2 {
		t.Fatalf("the generated key and one configured key, once: %v", afterOne)
	}
	if _, err := f.app.Bootstrap(ctx, two, dir); err != nil {
		t.Fatal(err)
	}
	afterTwo := f.adminKeys(t)
	if len(afterTwo) != 2 {
		t.Fatalf("a new configured value must replace the old one, not join it: %v", afterTwo)
	}
	kept := 0
	for _, id := range afterTwo {
		for _, old := range afterOne {
			if id == old {
				kept++
			}
		}
	}
	if kept != 1 { // the generated key
		t.Fatalf("before %v, after %v: want the generated key kept and the old configured key gone", afterOne, afterTwo)
	}
}

func TestAddMember(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	u, err := f.app.AddUser(ctx, "ws_a", "  Ada@Example.COM ", " Ada ", "", "add-ada")
	if err != nil || u.Email != "ada@example.com" || u.FirstName != "Ada" || u.Role != app.RoleMember || !strings.HasPrefix(u.UserId, "user_") {
		t.Fatalf("added: %+v %v", u, err)
	}
	replay, err := f.app.AddUser(ctx, "ws_a", "ada@example.com", "Ada", "", "add-ada")
	if err != nil || replay.UserId != u.UserId {
		t.Fatalf("a replayed add answers the member it added: %+v %v", replay, err)
	}
	_, err = f.app.AddUser(ctx, "ws_a", "ADA@example.com", "", app.RoleAdmin, "")
	wantKind(t, err, apperr.Conflict, "the same address again, in other case")
	other, err := f.app.AddUser(ctx, "ws_b", "ada@example.com", "", "", "")
	if err != nil || other.UserId == u.UserId {
		t.Fatalf("the same address in another workspace is another member: %+v %v", other, err)
	}
	for _, bad := range []string{"not an address", "Ada <ada@example.com>", strings.Repeat("a", 250) + "@example.com"} {
		_, err := f.app.AddUser(ctx, "ws_a", bad, "", "", "")
		wantKind(t, err, apperr.Invalid, "e-mail "+bad[:min(len(bad), 20)])
	}
}
