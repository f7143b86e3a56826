package stack

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/runtime"
	"github.com/voiceai-platform/voiceai/services/gateway"
)

// secondGateway runs another gateway replica on s's NATS with the same
// deployment secret, as a second process would, and answers a Stack that
// calls it (for call and friends) until t ends.
func secondGateway(t *testing.T, s *Stack, cfg Config) *Stack {
	t.Helper()
	nc, err := nats.Connect(s.NATSURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	d, err := runtime.NewDeps(nc, nil, slog.New(slog.DiscardHandler), prometheus.NewRegistry(), 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	settings := cfg.Config.Settings()
	settings.ConsoleSecret = cfg.SecretKey
	gw, err := gateway.New(ctx, d, settings)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	select {
	case <-gw.KeysReady():
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("second gateway: keys not loaded within 30 s")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- gw.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-served })
	return &Stack{Addr: ln.Addr().String(), NATSURL: s.NATSURL}
}

// Finding 5 of issue 47: a console sign-out ends the session on every
// gateway replica at once, not only in the browser that dropped the
// cookie: the old cookie and its CSRF token are 401 on the API and on
// /console/session, on the replica signed out of and on another.
func TestConsoleSignOutEndsTheSessionOnEveryReplica(t *testing.T) {
	cfg := adminConfig(t, func(c *Config) { c.SecretKey = "deployment-secret-for-two-gateways" })
	one := run(t, cfg, slog.New(slog.DiscardHandler), nil)
	two := secondGateway(t, one, cfg)

	cookie, info, _ := consoleSession(t, one, adminKey)
	jar, csrf := "voiceai_console="+cookie.Value, info["csrf_token"].(string)
	create := func(s *Stack) response {
		return call(t, s, "POST", "/v1/convai/agents/create", "", `{"name":"From the console"}`,
			"Cookie", jar, "X-CSRF-Token", csrf, "Origin", "http://"+s.Addr)
	}
	// Before: the cookie is the key on both replicas.
	for _, s := range []*Stack{one, two} {
		if r := create(s); r.Code != 201 {
			t.Fatalf("before sign-out, create on %s: %d %s", s.Addr, r.Code, r.Body)
		}
		if r := call(t, s, "GET", api.ConsoleSessionPath, "", "", "Cookie", jar); r.Code != 200 || r.JSON(t)["csrf_token"] != csrf {
			t.Fatalf("before sign-out, GET session on %s: %d %s", s.Addr, r.Code, r.Body)
		}
	}
	// Another session of the same key, to show one sign-out ends one.
	otherCookie, otherInfo, _ := consoleSession(t, two, adminKey)

	if r := call(t, one, "DELETE", api.ConsoleSessionPath, "", "", "Cookie", jar, "Origin", "http://"+one.Addr); r.Code != 204 {
		t.Fatalf("sign out: %d %s", r.Code, r.Body)
	}
	// After, with no wait: 401 everywhere.
	for _, s := range []*Stack{one, two} {
		wantError(t, create(s), 401, "console_session_ended")
		wantError(t, call(t, s, "GET", "/v1/convai/agents", "", "", "Cookie", jar, "X-CSRF-Token", csrf), 401, "console_session_ended")
		wantError(t, call(t, s, "GET", api.ConsoleSessionPath, "", "", "Cookie", jar), 401, "console_session_ended")
		// Signing in again makes a new session that works.
		if r := call(t, s, "GET", "/v1/convai/agents", "", "", "Cookie", "voiceai_console="+otherCookie.Value,
			"X-CSRF-Token", otherInfo["csrf_token"].(string)); r.Code != 200 {
			t.Fatalf("the key's other session on %s: %d %s", s.Addr, r.Code, r.Body)
		}
	}
	// Signing out on the second replica ends that session on the first.
	if r := call(t, two, "DELETE", api.ConsoleSessionPath, "", "", "Cookie", "voiceai_console="+otherCookie.Value); r.Code != 204 {
		t.Fatalf("sign out on the second replica: %d %s", r.Code, r.Body)
	}
	wantError(t, call(t, one, "GET", api.ConsoleSessionPath, "", "", "Cookie", "voiceai_console="+otherCookie.Value), 401, "console_session_ended")
	// A key header still works: signing out ends a session, not the key.
	if r := call(t, two, "GET", "/v1/convai/agents", adminKey, ""); r.Code != 200 {
		t.Fatalf("the key after its sessions ended: %d %s", r.Code, r.Body)
	}
}
