package stack

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"strings"
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
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // also when runGateway fails
	addr, served := runGateway(ctx, t, s, cfg)
	t.Cleanup(func() { cancel(); <-served })
	return &Stack{Addr: addr, NATSURL: s.NATSURL}
}

// runGateway runs a gateway replica on s's NATS until ctx ends: its
// address, and what its Serve returned once it has drained.
func runGateway(ctx context.Context, t *testing.T, s *Stack, cfg Config) (addr string, served <-chan error) {
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
	settings := cfg.Config.Settings()
	settings.ConsoleSecret = cfg.SecretKey
	gw, err := gateway.New(ctx, d, settings)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-gw.KeysReady():
	case <-time.After(30 * time.Second):
		t.Fatal("second gateway: keys not loaded within 30 s")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- gw.Serve(ctx, ln) }()
	return ln.Addr().String(), done
}

// Finding 5 of issue 47: a console sign-out ends the session on every
// gateway replica at once, not only in the browser that dropped the
// cookie: the old cookie and its CSRF token are 401 on the API and on
// /console/session, on the replica signed out of and on another.
func TestHostileSignedOutCookieOnEveryReplica(t *testing.T) {
	t.Parallel()
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

	// A session ends with its key too: revoked through one replica, its
	// cookie is refused by both.
	key, account, keyID := newKey(t, one, adminKey, `["convai_read"]`, "")
	kc, ki, _ := consoleSession(t, two, key)
	kjar, kcsrf := "voiceai_console="+kc.Value, ki["csrf_token"].(string)
	if r := call(t, one, "GET", "/v1/convai/agents", "", "", "Cookie", kjar, "X-CSRF-Token", kcsrf); r.Code != 200 {
		t.Fatalf("the key's session before revocation: %d %s", r.Code, r.Body)
	}
	if r := call(t, one, "DELETE", "/v1/service-accounts/"+account+"/api-keys/"+keyID, adminKey, ""); r.Code != 200 {
		t.Fatalf("revoke: %d %s", r.Code, r.Body)
	}
	for _, s := range []*Stack{one, two} {
		eventually(t, 5*time.Second, "the revoked key's session refused on "+s.Addr, func() bool {
			return call(t, s, "GET", "/v1/convai/agents", "", "", "Cookie", kjar, "X-CSRF-Token", kcsrf).Code == 401
		})
		wantError(t, call(t, s, "GET", api.ConsoleSessionPath, "", "", "Cookie", kjar), 401, "api_key_revoked")
	}
}

// wantInvalid asserts a 422 with an entry of typ at loc (JSON).
func wantInvalid(t *testing.T, r response, loc, typ string) {
	t.Helper()
	if r.Code != 422 {
		t.Fatalf("got %d %s, want 422 %s at %s", r.Code, r.Body, typ, loc)
	}
	var body struct {
		Detail []struct {
			Loc  []any  `json:"loc"`
			Type string `json:"type"`
			Msg  string `json:"msg"`
		} `json:"detail"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatalf("422 body %s: %v", r.Body, err)
	}
	for _, d := range body.Detail {
		if b, _ := json.Marshal(d.Loc); string(b) == loc && d.Type == typ && d.Msg != "" {
			return
		}
	}
	t.Fatalf("422 %s, want %s at %s", r.Body, typ, loc)
}

// Finding 6 of issue 47, and the number, string and timestamp items of
// finding 8: every edge follows the same rules, ingest included. A
// number must fit a float64 (1e400 is a 422 naming the field, indices
// included, never stored); an integer is one whatever its spelling (5.0
// is 5, and is stored as 5); a lone surrogate is refused, not stored;
// an event's timestamp is after 1970 and not beyond tomorrow. What is
// stored reads back, through the API and into a test.
func TestHostileNumbersStringsAndTimestamps(t *testing.T) {
	t.Parallel()
	s := startAdmin(t)
	agent := newAgent(t, s, adminKey, "Numbers")
	post := func(path, body string) response { return call(t, s, "POST", path, adminKey, body) }
	const events, tests = "/v1/convai/events", "/v1/convai/agent-testing/create"
	ended := func(data string) string {
		return `{"event":"conversation_ended","timestamp":"` + time.Now().UTC().Format(time.RFC3339) + `","data":` + data + `}`
	}

	// Numbers beyond a float64: refused at ingest, as at test create, at
	// the value's own loc.
	wantInvalid(t, post(events, ended(`{"conversation_id":"conv_big","agent_id":"`+agent+`","transcript":[
		{"role":"user","message":"hi","time_in_call_secs":0},{"role":"agent","message":"hello","time_in_call_secs":1e400}]}`)),
		`["body","data","transcript",1,"time_in_call_secs"]`, "finite_number")
	wantInvalid(t, post(events, `{"event":"agent_busy","data":{"agent_id":"`+agent+`","queue_depth":-1`+strings.Repeat("0", 400)+`}}`),
		`["body","data","queue_depth"]`, "finite_number")
	testBody := func(at string) string {
		return `{"name":"Big","agent_id":"` + agent + `","type":"llm","success_condition":"Polite",
		  "chat_history":[{"role":"user","message":"hi","time_in_call_secs":` + at + `}]}`
	}
	wantInvalid(t, post(tests, testBody("1e400")), `["body","chat_history",0,"time_in_call_secs"]`, "finite_number")
	wantInvalid(t, post(tests, testBody(`"soon"`)), `["body","chat_history",0,"time_in_call_secs"]`, "float_type")
	if r := call(t, s, "GET", "/v1/convai/conversations/conv_big", adminKey, ""); r.Code != 404 {
		t.Fatalf("a refused event was stored: %d %s", r.Code, r.Body)
	}

	// Integers whatever their spelling: taken and stored as integers.
	if r := post(tests, testBody("2.0")); r.Code != 200 {
		t.Fatalf("time_in_call_secs 2.0: %d %s", r.Code, r.Body)
	}
	if r := post(events, ended(`{"conversation_id":"conv_int","agent_id":"`+agent+`","turn_count":12.0,"call_duration_secs":9e1,
		"transcript":[{"role":"user","message":"Where is my order?","time_in_call_secs":0.0},
		{"role":"agent","message":"On its way \ud83d\ude9a","time_in_call_secs":3E0}]}`)); r.Code != 202 {
		t.Fatalf("integers spelt as decimals: %d %s", r.Code, r.Body)
	}
	var conv response
	eventually(t, 10*time.Second, "the conversation is stored with its transcript", func() bool {
		conv = call(t, s, "GET", "/v1/convai/conversations/conv_int", adminKey, "")
		return conv.Code == 200 && strings.Contains(string(conv.Body), "Where is my order?")
	})
	var served struct {
		Transcript []map[string]any `json:"transcript"`
	}
	if err := json.Unmarshal(conv.Body, &served); err != nil || len(served.Transcript) != 2 ||
		served.Transcript[1]["message"] != "On its way 🚚" || !strings.Contains(string(conv.Body), `"time_in_call_secs":3}`) {
		t.Fatalf("the conversation as served: %s", conv.Body)
	}
	if r := post("/v1/convai/agent-testing/from-conversation", `{"conversation_id":"conv_int","turn_index":1}`); r.Code != 201 {
		t.Fatalf("a test from the conversation: %d %s", r.Code, r.Body)
	}

	// new_turns_limit 5.0 is the integer 5 (it was "not a valid number").
	simulate := func(limit string) response {
		return post("/v1/convai/agents/"+agent+"/simulate-conversation", `{"simulation_specification":{
			"simulated_user_config":{"first_message":"Hi","prompt":{"prompt":"You want the opening hours."}}},"new_turns_limit":`+limit+`}`)
	}
	if r := simulate("5.0"); r.Code != 200 {
		t.Fatalf("new_turns_limit 5.0: %d %s", r.Code, r.Body)
	}
	wantInvalid(t, simulate("5.5"), `["body","new_turns_limit"]`, "int_type")

	// A lone surrogate, escaped or raw: refused, not stored.
	wantInvalid(t, post(events, ended(`{"conversation_id":"conv_lone","agent_id":"`+agent+`","transcript":[
		{"role":"user","message":"half \ud800 a character","time_in_call_secs":0}]}`)),
		`["body","data","transcript",0,"message"]`, "string_unicode")
	wantInvalid(t, post(events, ended("{\"conversation_id\":\"conv_lone\",\"call_successful\":\"success\",\"note\":\"\xed\xa0\x80\"}")),
		`["body","data","note"]`, "string_unicode")
	wantInvalid(t, post(tests, `{"name":"Half \udc00","agent_id":"`+agent+`","type":"llm","success_condition":"Polite",
		"chat_history":[{"role":"user","message":"hi","time_in_call_secs":0}]}`), `["body","name"]`, "string_unicode")

	// Timestamps from 1970 to a day ahead.
	for _, ts := range []string{"0000-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "1969-12-31T23:59:59Z", time.Now().Add(49 * time.Hour).UTC().Format(time.RFC3339)} {
		wantInvalid(t, post(events, `{"event":"conversation_started","timestamp":"`+ts+`","data":{"conversation_id":"conv_when"}}`),
			`["body","timestamp"]`, "datetime_range")
	}
	if r := call(t, s, "GET", "/v1/convai/conversations/conv_lone", adminKey, ""); r.Code != 404 {
		t.Fatalf("a refused event was stored: %d %s", r.Code, r.Body)
	}
}

// Finding 8 of issue 47: the save-time address check refuses the numeric
// forms resolvers read as loopback (0x7f000001, 2130706433, 0177.0.0.1,
// 127.1), for webhooks and for agents' own endpoints, even where the
// dotted quad itself is allowed.
func TestHostileNumericHosts(t *testing.T) {
	t.Parallel()
	s := startAdmin(t, localHooks)
	for _, host := range []string{"0x7f000001", "2130706433", "0177.0.0.1", "127.1", "127.0.0.1."} {
		wantInvalid(t, call(t, s, "POST", "/v1/convai/webhooks", adminKey, `{"url":"https://`+host+`/hook","events":["call_started"]}`),
			`["body","url"]`, "url_parsing")
		r := call(t, s, "POST", "/v1/convai/agents/create", adminKey, `{"name":"Numeric","conversation_config":{"agent":{
			"prompt":{"prompt":"p","llm":"custom-llm","custom_llm":{"url":"https://`+host+`/v1","model_id":"m"}}}}}`)
		if r.Code != 422 || !strings.Contains(string(r.Body), "custom_llm") || !strings.Contains(string(r.Body), "url_parsing") {
			t.Fatalf("agent endpoint at %s: %d %s", host, r.Code, r.Body)
		}
	}
}

// Finding 8 of issue 47: a refused destination tells the tenant why, not
// what its host name resolved to.
func TestHostileRefusalsHideTheNetwork(t *testing.T) {
	t.Parallel()
	s := startAdmin(t)
	r := call(t, s, "POST", "/v1/convai/webhooks", adminKey, `{"url":"https://localhost:1/hook","events":["call_started"]}`)
	if r.Code/100 != 2 {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	id, _ := r.JSON(t)["webhook_id"].(string)
	if id == "" {
		id, _ = r.JSON(t)["id"].(string)
	}
	r = call(t, s, "POST", "/v1/voiceai/webhooks/"+id+"/test", adminKey, `{"event_type":"conversation_ended"}`)
	body := string(r.Body)
	if r.Code != 200 || !strings.Contains(body, "localhost resolves to a loopback address") ||
		strings.Contains(body, "127.0.0.1") || strings.Contains(body, "::1") {
		t.Fatalf("test delivery to a name that resolves to loopback: %d %s", r.Code, body)
	}
}
