package identity

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/pkg/projection"
	"github.com/voiceai-platform/voiceai/pkg/runtime"
	"github.com/voiceai-platform/voiceai/pkg/runtime/runtimetest"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/services/identity/adapters"
	"github.com/voiceai-platform/voiceai/services/identity/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/identity/app"
)

// Listings show a write as soon as it is answered, keep each workspace's
// admin account apart, and are the same after a restart (rebuilt from the
// stream in memory mode, read from the durable copy in store mode).
func TestListingsReadTheirWritesAndSurviveARestart(t *testing.T) {
	runtimetest.OnEachReadIndex(t, testListings)
}

func testListings(t *testing.T, index string) {
	var d runtime.Deps // the running replica's
	start := runtimetest.Restarts(t, index, func(ctx context.Context, deps runtime.Deps) (*Service, error) {
		d = deps
		return Start(ctx, d, DefaultConfig)
	})
	svc, stop := start()
	defer func() { stop() }()
	// A second per write: creation times order the listings.
	clock := time.Unix(1_800_000_000, 0)
	svc.App.Now = func() time.Time { clock = clock.Add(time.Second); return clock }
	ctx := context.Background()
	for _, ws := range []string{"ws_a", "ws_b"} {
		if _, err := svc.App.CreateWorkspace(ctx, ws, ws); err != nil {
			t.Fatal(err)
		}
	}
	caller := principal.Principal{WorkspaceID: "ws_a", UserID: "sa_admin", Permissions: []string{principal.PermissionAll}}
	do := func(svc *Service, method, path, body string) map[string]any {
		t.Helper()
		return runtimetest.Do(t, svc.Handler, caller, method, path, body)
	}
	keyNames := func(svc *Service, account string) string {
		t.Helper()
		var names []string
		for _, k := range do(svc, "GET", "/v1/service-accounts/"+account+"/api-keys", "")["api-keys"].([]any) {
			names = append(names, k.(map[string]any)["name"].(string))
		}
		return strings.Join(names, ",")
	}

	bot := do(svc, "POST", "/v1/service-accounts", `{"name":"bot"}`)["service-account-user-id"].(string)
	keys := "/v1/service-accounts/" + bot + "/api-keys"
	k1 := do(svc, "POST", keys, `{"name":"one","permissions":"all"}`)["key_id"].(string)
	if got := keyNames(svc, bot); got != "one" {
		t.Fatalf("keys right after the create: %q", got)
	}
	do(svc, "POST", keys, `{"name":"two","permissions":"all"}`)
	do(svc, "PATCH", keys+"/"+k1, `{"name":"uno"}`)
	if got := keyNames(svc, bot); got != "uno,two" {
		t.Fatalf("keys right after the update: %q", got)
	}
	do(svc, "DELETE", keys+"/"+k1, "")
	if got := keyNames(svc, bot); got != "two" {
		t.Fatalf("keys right after the revocation: %q", got)
	}
	do(svc, "POST", "/v1/workspace/invites/add", `{"email":"ada@example.com","first_name":"Ada"}`)
	do(svc, "POST", "/v1/workspace/invites/add", `{"email":"bo@example.com","seat_type":"workspace_admin"}`)
	do(svc, "POST", "/v1/workspace/members", `{"email":"BO@example.com","is_locked":true,"workspace_seat_type":"workspace_member"}`)

	listings := func(svc *Service) string {
		a, _ := json.Marshal(do(svc, "GET", "/v1/service-accounts", ""))
		m, _ := json.Marshal(runtimetest.DoList(t, svc.Handler, caller, "GET", "/v1/workspace/members"))
		return string(a) + "\n" + string(m)
	}
	before := listings(svc)
	accounts := do(svc, "GET", "/v1/service-accounts", "")["service-accounts"].([]any)
	if len(accounts) != 2 || accounts[0].(map[string]any)["service_account_user_id"] != "sa_admin" || accounts[1].(map[string]any)["name"] != "bot" || !strings.Contains(before, `"first_name":"Ada"`) ||
		!strings.Contains(before, `"email":"bo@example.com","first_name":"","is_locked":true,"is_owner":false,"is_service_account":false,"role":"member","seat_type":"workspace_member"`) {
		t.Fatalf("listings of ws_a: %s", before)
	}

	for _, durable := range []string{adapters.AccountsDurable, adapters.KeysDurable, adapters.UsersDurable} {
		if err := projection.WaitCaughtUp(ctx, d.JS, events.IdentityStream, durable); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	svc, stop = start()
	if after := listings(svc); after != before {
		t.Fatalf("after a restart:\n%s\nbefore:\n%s", after, before)
	}
}

// A command puts its state in the read model before it answers: a model
// no stream feeds lists the write at once.
func TestCommandsPutTheirStateBeforeAnswering(t *testing.T) {
	env := testenv.New(t)
	js, err := jetstream.New(env.Conn(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := eventstore.EnsureEventStreams(ctx, js, 1, events.IdentityStream); err != nil {
		t.Fatal(err)
	}
	rm := memory.NewReadModel()
	a := app.New(eventstore.New(js, events.IdentityStream), rm, slog.New(slog.DiscardHandler), time.Now)
	caller := principal.Principal{WorkspaceID: "ws_a", UserID: "sa_admin", Permissions: []string{principal.PermissionAll}}
	acct, err := a.CreateServiceAccount(ctx, principal.In("ws_a"), "bot")
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := a.CreateKey(ctx, principal.Caller{Principal: caller}, acct.GetUserId(), app.KeySpec{Name: "one", Permissions: []string{principal.PermissionAll}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.AddUser(ctx, principal.In("ws_a"), app.NewMember{Email: "ada@example.com", FirstName: "Ada"}); err != nil {
		t.Fatal(err)
	}
	accts, _ := rm.ListAccounts(ctx, "ws_a")
	keys, _ := rm.ListKeys(ctx, "ws_a", acct.GetUserId())
	users, _ := rm.ListUsers(ctx, "ws_a")
	if len(accts) != 1 || len(keys) != 1 || keys[0].ID != key.GetKeyId() || len(users) != 1 {
		t.Fatalf("after the creates: accounts %v, keys %v, users %v", accts, keys, users)
	}
	if err := a.RevokeKey(ctx, principal.Caller{Principal: caller}, acct.GetUserId(), key.GetKeyId()); err != nil {
		t.Fatal(err)
	}
	if keys, _ := rm.ListKeys(ctx, "ws_a", ""); len(keys) != 0 {
		t.Fatalf("after the revocation: keys %v", keys)
	}
}
