package app_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/eventlog/memlog"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	events "github.com/voiceai-platform/voiceai/proto-events"
	identityv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/identity/v1"
	"github.com/voiceai-platform/voiceai/services/identity/adapters/memory"
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

// A configured admin key shorter than 32 characters is refused at start,
// saying why, and no key is minted: requests with unknown keys are not
// limited, so an admin key must not be guessable.
func TestBootstrapRefusesAShortConfiguredKey(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	short := strings.Repeat("k", domain.MinConfiguredSecretLen-1)
	if _, err := f.app.Bootstrap(ctx, short, t.TempDir()); err == nil || !strings.Contains(err.Error(), "at least 32") {
		t.Fatalf("a %d-character admin key: %v; want it refused", len(short), err)
	}
	if keys := f.adminKeys(t); len(keys) != 0 {
		t.Fatalf("a refused configured key minted keys: %v", keys)
	}
	if _, err := f.app.Bootstrap(ctx, short+"k", t.TempDir()); err != nil {
		t.Fatalf("a %d-character admin key: %v", len(short)+1, err)
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
	u, err := f.app.AddUser(ctx, principal.Caller{Principal: principal.Principal{WorkspaceID: "ws_a"}, CommandID: "add-ada"}, app.NewMember{Email: "  Ada@Example.COM ", FirstName: " Ada "})
	if err != nil || u.Email != "ada@example.com" || u.FirstName != "Ada" || u.Role != app.RoleMember || !strings.HasPrefix(u.UserId, "user_") {
		t.Fatalf("added: %+v %v", u, err)
	}
	replay, err := f.app.AddUser(ctx, principal.Caller{Principal: principal.Principal{WorkspaceID: "ws_a"}, CommandID: "add-ada"}, app.NewMember{Email: "ada@example.com", FirstName: "Ada"})
	if err != nil || replay.UserId != u.UserId {
		t.Fatalf("a replayed add answers the member it added: %+v %v", replay, err)
	}
	_, err = f.app.AddUser(ctx, principal.In("ws_a"), app.NewMember{Email: "ADA@example.com", Role: app.RoleAdmin})
	wantKind(t, err, apperr.Conflict, "the same address again, in other case")
	other, err := f.app.AddUser(ctx, principal.In("ws_b"), app.NewMember{Email: "ada@example.com"})
	if err != nil || other.UserId == u.UserId {
		t.Fatalf("the same address in another workspace is another member: %+v %v", other, err)
	}
	for _, bad := range []string{"not an address", "Ada <ada@example.com>", strings.Repeat("a", 250) + "@example.com"} {
		_, err := f.app.AddUser(ctx, principal.In("ws_a"), app.NewMember{Email: bad})
		wantKind(t, err, apperr.Invalid, "e-mail "+bad[:min(len(bad), 20)])
	}
}

// unavailable is an error a retry may cure, as the JetStream adapter
// marks one (a stream between leaders).
type unavailable struct{}

func (unavailable) Error() string     { return "nats: no response from stream" }
func (unavailable) Unavailable() bool { return true }

// flakyLog is an event log that cannot answer its first appends: with
// lose set, the append is stored and only its answer is lost.
type flakyLog struct {
	eventlog.Store
	mu       sync.Mutex
	failures int
	lose     bool
}

func (l *flakyLog) Append(ctx context.Context, subject string, expected uint64, commandID string, ev eventlog.Event) (eventlog.Appended, error) {
	l.mu.Lock()
	fail := l.failures > 0
	l.failures--
	l.mu.Unlock()
	switch {
	case fail && l.lose:
		_, _ = l.Store.Append(ctx, subject, expected, commandID, ev)
		return eventlog.Appended{}, unavailable{}
	case fail:
		return eventlog.Appended{}, unavailable{}
	}
	return l.Store.Append(ctx, subject, expected, commandID, ev)
}

// A process started while its stream cannot answer (just after a
// partition heals) waits for it instead of exiting; a key stored by an
// attempt whose answer was lost is still shown and written, once.
func TestBootstrapWaitsForTheLog(t *testing.T) {
	for _, lose := range []bool{false, true} {
		t.Run(fmt.Sprintf("answer lost %v", lose), func(t *testing.T) {
			log := &flakyLog{Store: memlog.New(), failures: 3, lose: lose}
			a := app.New(log, memory.NewReadModel(), slog.New(slog.DiscardHandler), time.Now)
			dir := t.TempDir()
			res, err := a.Bootstrap(context.Background(), "", dir)
			if err != nil || res.GeneratedSecret == "" {
				t.Fatalf("bootstrap: %+v %v", res, err)
			}
			if b, err := os.ReadFile(res.KeyFile); err != nil || strings.TrimSpace(string(b)) != res.GeneratedSecret {
				t.Fatalf("the key file: %q %v", b, err)
			}
			// The key stored is the one shown (the read model may lag an
			// append whose answer was lost: the log says).
			subject, _ := events.APIKeySubject(domain.DefaultWorkspaceID, "key_bootstrap_generated")
			msg, _, found, err := esproto.Last(context.Background(), log.Store, subject)
			key, _ := events.StateOf[*identityv1.ApiKey](msg)
			if err != nil || !found || !bytes.Equal(key.GetSecretSha256(), domain.HashSecret(res.GeneratedSecret)) {
				t.Fatalf("the stored key is not the one shown: %v %v", found, err)
			}
		})
	}
	// What a retry cannot cure ends the start at once.
	a := app.New(memlog.New(), memory.NewReadModel(), slog.New(slog.DiscardHandler), time.Now)
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Bootstrap(context.Background(), "", notADir); err == nil {
		t.Fatal("a data directory that is a file: no error")
	}
}
