package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/voiceai-platform/voiceai/pkg/config"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/cli"
)

// start runs a stack in dir with cfg tweaks and stops it when t ends.
func start(t *testing.T, dir string, tweak func(*Config)) *Stack {
	t.Helper()
	cfg := TestConfig(dir, testenv.StoreProcess)
	if tweak != nil {
		tweak(&cfg)
	}
	// The stack's warnings and errors are shown when the test fails: what
	// went wrong inside is most of a diagnosis.
	var logs testkit.LogBuffer
	var logTo io.Writer = &logs
	level := slog.LevelWarn
	if os.Getenv("VOICEAI_TEST_LOG") != "" { // show all the stack's logs when debugging a test
		logTo, level = os.Stderr, slog.LevelInfo
	}
	t.Cleanup(func() { // after the stack has stopped
		if t.Failed() {
			t.Logf("the stack's warnings and errors:\n%s", logs.String())
		}
	})
	return run(t, cfg, slog.New(slog.NewTextHandler(logTo, &slog.HandlerOptions{Level: level})), nil)
}

// startLogging is startAdmin with the stack's log lines at level and
// above kept in logs, for a test that reads them.
func startLogging(t *testing.T, level slog.Level, tweaks ...func(*Config)) (s *Stack, logs *testkit.LogBuffer) {
	t.Helper()
	logs = &testkit.LogBuffer{}
	return run(t, adminConfig(t, tweaks...), slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: level})), nil), logs
}

// run starts a stack on cfg that logs to log and registers its metrics in
// reg (nil: none), and stops it when t ends.
func run(t *testing.T, cfg Config, log *slog.Logger, reg *prometheus.Registry) *Stack {
	t.Helper()
	s, err := Start(context.Background(), cfg, log, reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

type response struct {
	Code   int
	Header http.Header
	Body   []byte
}

// JSON decodes the body.
func (r response) JSON(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, r.Body)
	}
	return m
}

// call sends one request to the stack's gateway.
func call(t *testing.T, s *Stack, method, path, key, body string, headers ...string) response {
	t.Helper()
	req, err := testkit.APIRequest(context.Background(), method, "http://"+s.Addr+path, key, body, headers...)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	checkContract(t, req, body, resp, b)
	return response{Code: resp.StatusCode, Header: resp.Header, Body: b}
}

// postForID posts body to path with key, wants code and answers the id the
// answer names in idField: what the helpers that create or send one thing
// share.
func postForID(t *testing.T, s *Stack, key, path, body string, code int, idField string) string {
	t.Helper()
	r := call(t, s, "POST", path, key, body)
	if r.Code != code {
		t.Fatalf("POST %s: %d %s, want %d", path, r.Code, r.Body, code)
	}
	return r.JSON(t)[idField].(string)
}

// createAgent creates an agent from body with key, wants 201 and answers
// its id: the helpers that make each test's agent differ only in the body.
func createAgent(t *testing.T, s *Stack, key, body string) string {
	t.Helper()
	return postForID(t, s, key, "/v1/convai/agents/create", body, 201, "agent_id")
}

// createWebhook creates a webhook from body with the admin key, wants 201
// and answers its id.
func createWebhook(t *testing.T, s *Stack, body string) string {
	t.Helper()
	return postForID(t, s, adminKey, "/v1/convai/webhooks", body, 201, "webhook_id")
}

// sendCallEvent posts event (call_started, call_ended) of the call callID
// with the admin key, wants 202 and answers the event's id.
func sendCallEvent(t *testing.T, s *Stack, event, callID string) string {
	t.Helper()
	return postForID(t, s, adminKey, "/v1/convai/events", fmt.Sprintf(`{"event":%q,"data":{"call_id":%q}}`, event, callID), 202, "event_id")
}

// wantError asserts an application error: code, status and the spec's body.
func wantError(t *testing.T, r response, code int, status string) {
	t.Helper()
	if r.Code != code {
		t.Fatalf("got %d %s, want %d %s", r.Code, r.Body, code, status)
	}
	var body struct {
		Detail struct {
			Status    string  `json:"status"`
			Message   string  `json:"message"`
			RequestID *string `json:"request_id"`
		} `json:"detail"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatalf("error body %s: %v", r.Body, err)
	}
	if body.Detail.Status != status || body.Detail.Message == "" {
		t.Fatalf("error body %s, want status %q", r.Body, status)
	}
	rid := r.Header.Get("X-Request-Id")
	if rid == "" || body.Detail.RequestID == nil || *body.Detail.RequestID != rid {
		t.Fatalf("request id header %q vs body %v", rid, body.Detail.RequestID)
	}
}

// eventually polls cond until it holds or within passes.
var eventually = testkit.Eventually

// collected is what a test's HTTP receiver has been sent: its handler
// adds while the test reads.
type collected[T any] struct {
	mu  sync.Mutex
	got []T
}

func (c *collected[T]) add(v T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, v)
}

// all is a copy of what has come so far.
func (c *collected[T]) all() []T {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.got)
}

// await waits until at least n have come, and answers them all.
func (c *collected[T]) await(t *testing.T, within time.Duration, what string, n int) []T {
	t.Helper()
	eventually(t, within, what, func() bool { return len(c.all()) >= n })
	return c.all()
}

// newKey creates a service account and a key with perms (and extra JSON
// fields) using admin, returning the secret, account id and key id.
func newKey(t *testing.T, s *Stack, admin, perms string, extra string) (secret, account, keyID string) {
	t.Helper()
	r := call(t, s, "POST", "/v1/service-accounts", admin, `{"name":"svc"}`)
	if r.Code != 200 {
		t.Fatalf("create account: %d %s", r.Code, r.Body)
	}
	account = r.JSON(t)["service-account-user-id"].(string)
	body := `{"name":"k","permissions":` + perms + extra + `}`
	r = call(t, s, "POST", "/v1/service-accounts/"+account+"/api-keys", admin, body)
	if r.Code != 200 {
		t.Fatalf("create key: %d %s", r.Code, r.Body)
	}
	m := r.JSON(t)
	return m["xi-api-key"].(string), account, m["key_id"].(string)
}

// lastAgentEvent is the last event stored for an agent of the default
// workspace, as a subscriber of the AGENTS stream reads it.
func lastAgentEvent(t *testing.T, s *Stack, agentID string) *jetstream.RawStreamMsg {
	t.Helper()
	str, err := testenv.JetStreamAt(t, s.NATSURL).Stream(context.Background(), "AGENTS")
	if err != nil {
		t.Fatal(err)
	}
	msg, err := str.GetLastMsgForSubject(context.Background(), "agents.evt.ws_default."+agentID)
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// startAdmin runs a stack in a fresh directory, administered with
// adminKey under rate limits that a test's bursts of calls (and the CLI's
// polls) never reach, with tweaks applied on top.
func startAdmin(t *testing.T, tweaks ...func(*Config)) *Stack {
	t.Helper()
	return start(t, t.TempDir(), func(c *Config) { administered(c, tweaks) })
}

// onEachReadIndex runs test, as a subtest named after the read model, on
// a startAdmin stack of its own for each: the memory index and the store
// must answer listings alike.
func onEachReadIndex(t *testing.T, test func(t *testing.T, s *Stack)) {
	for _, index := range []string{config.ReadIndexMemory, config.ReadIndexStore} {
		t.Run(index, func(t *testing.T) { test(t, startAdmin(t, func(c *Config) { c.ReadIndex = index })) })
	}
}

// adminConfig is the configuration startAdmin runs, for a test that
// starts the stack with a log or metrics of its own.
func adminConfig(t *testing.T, tweaks ...func(*Config)) Config {
	cfg := TestConfig(t.TempDir(), testenv.StoreProcess)
	administered(&cfg, tweaks)
	return cfg
}

func administered(c *Config, tweaks []func(*Config)) {
	c.BootstrapAdminKey = adminKey
	c.RateLimitPerMinute, c.RateLimitPerHour = 100_000, 1_000_000
	for _, tweak := range tweaks {
		tweak(c)
	}
}

// localHooks lets webhooks deliver to this machine: a test's receiver.
func localHooks(c *Config) { c.Outbound.AllowHosts = "127.0.0.1" }

// voiceaiCLI runs the CLI in-process against s.
func voiceaiCLI(t *testing.T, s *Stack, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	code := cli.Run(ctx, append(args, "--base-url", "http://"+s.Addr, "--api-key", adminKey), &out, &errOut)
	t.Logf("voiceai %v: exit %d\n%s%s", args, code, out.String(), errOut.String())
	return code, out.String(), errOut.String()
}

// confusion counts a judge's verdicts against the truth, for its
// agreement and Cohen's κ computed by hand.
type confusion struct{ tp, fp, ff, tf float64 }

// add counts one verdict: whether the judge passed it, and whether it
// truly passed.
func (c *confusion) add(judgePassed, truthPassed bool) {
	switch {
	case judgePassed && truthPassed:
		c.tp++
	case judgePassed:
		c.fp++
	case truthPassed:
		c.ff++
	default:
		c.tf++
	}
}

func (c confusion) n() float64 { return c.tp + c.fp + c.ff + c.tf }

// agreement is p_o, the share of verdicts that are the truth.
func (c confusion) agreement() float64 { return (c.tp + c.tf) / c.n() }

// kappa is Cohen's κ: the agreement beyond what chance would give.
func (c confusion) kappa() float64 {
	n := c.n()
	pe := ((c.tp+c.fp)/n)*((c.tp+c.ff)/n) + ((c.ff+c.tf)/n)*((c.fp+c.tf)/n)
	return (c.agreement() - pe) / (1 - pe)
}
