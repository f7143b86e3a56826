package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/voiceai-platform/voiceai/pkg/dirlock"
	"github.com/voiceai-platform/voiceai/pkg/natsx"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
)

// The all-in-one's gateway calls the services it runs beside in process
// (natsx.Forwarder.InProcess): a write and a read through it send no
// request over NATS.
func TestTheGatewayCallsItsServicesInProcess(t *testing.T) {
	t.Parallel()
	s := startAdmin(t)
	forwarded, err := s.Conn().SubscribeSync(natsx.Subject("*"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	id := createAgent(t, s, adminKey, `{"name":"In process"}`)
	if r := call(t, s, "GET", "/v1/convai/agents/"+id, adminKey, ""); r.Code != 200 {
		t.Fatalf("get: %d %s", r.Code, r.Body)
	}
	// A request sent over NATS before this flush has reached the
	// subscription by its end.
	if err := s.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := forwarded.Pending(); n != 0 {
		m, _ := forwarded.NextMsg(0)
		t.Fatalf("%d requests went over NATS, the first to %s", n, m.Subject)
	}
}

// The embedded NATS is no way around the gateway: a service trusts the
// workspace and permissions a request on its subject carries, so a client
// without the password in data/nats.url is refused, and the URL written
// there (what the CLI and workspace create use) is let in.
func TestTheEmbeddedNATSTakesOnlyTheStacksClients(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, dir, nil)
	u, err := url.Parse(s.NATSURL)
	if err != nil || u.User == nil {
		t.Fatalf("the stack's NATS URL carries no credentials: %v", err)
	}
	written, err := os.ReadFile(filepath.Join(dir, NATSURLFile))
	if err != nil || strings.TrimSpace(string(written)) != s.NATSURL {
		t.Fatalf("%s holds %q (%v), want the stack's URL", NATSURLFile, written, err)
	}
	if info, err := os.Stat(filepath.Join(dir, NATSURLFile)); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v %v, want mode 0600", NATSURLFile, info, err)
	}
	u.User = nil
	if nc, err := nats.Connect(u.String(), nats.MaxReconnects(0)); !errors.Is(err, nats.ErrAuthorization) {
		if err == nil {
			nc.Close()
		}
		t.Fatalf("a client without the password: %v, want refused", err)
	}
	u.User = url.UserPassword("voiceai", "guessed")
	if nc, err := nats.Connect(u.String(), nats.MaxReconnects(0)); !errors.Is(err, nats.ErrAuthorization) {
		if err == nil {
			nc.Close()
		}
		t.Fatalf("a client with a wrong password: %v, want refused", err)
	}
	testenv.ConnAt(t, s.NATSURL).Close()
}

func TestAgentsThroughTheGateway(t *testing.T) {
	t.Parallel()
	s := startAdmin(t)

	r := call(t, s, "POST", "/v1/convai/agents/create", adminKey,
		`{"name":"Support","system_prompt":"Be kind.","agent_type":"business","tags":["a"],
		  "conversation_config":{"tts":{"voice_id":"v1"},"agent":{"first_message":"Hi"}}}`)
	if r.Code != 201 {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	created := r.JSON(t)
	id, _ := created["agent_id"].(string)
	if id == "" || created["id"] != id || created["name"] != "Support" || created["created_at_unix"] == nil {
		t.Fatalf("create response: %s", r.Body)
	}

	var got struct {
		AgentID            string `json:"agent_id"`
		Name               string `json:"name"`
		SystemPrompt       string `json:"system_prompt"`
		AgentType          string `json:"agent_type"`
		ConversationConfig struct {
			TTS   map[string]any `json:"tts"`
			Agent struct {
				FirstMessage string `json:"first_message"`
				Prompt       struct {
					Prompt string `json:"prompt"`
				} `json:"prompt"`
			} `json:"agent"`
		} `json:"conversation_config"`
		Metadata   map[string]int64 `json:"metadata"`
		AccessInfo map[string]any   `json:"access_info"`
		Tags       []string         `json:"tags"`
	}
	r = call(t, s, "GET", "/v1/convai/agents/"+id, adminKey, "")
	if err := json.Unmarshal(r.Body, &got); err != nil || r.Code != 200 {
		t.Fatalf("get: %d %s", r.Code, r.Body)
	}
	if got.SystemPrompt != "Be kind." || got.ConversationConfig.Agent.Prompt.Prompt != "Be kind." ||
		got.ConversationConfig.Agent.FirstMessage != "Hi" || got.AgentType != "business" ||
		got.Metadata["created_at_unix_secs"] == 0 || got.AccessInfo["is_creator"] != true || len(got.Tags) != 1 {
		t.Fatalf("get body: %s", r.Body)
	}

	// The SDK's agents.summaries.get: each id found, or why not.
	r = call(t, s, "GET", "/v1/convai/agents/summaries?agent_ids="+id+"&agent_ids=agent_unknown", adminKey, "")
	var summaries map[string]struct {
		Status      string         `json:"status"`
		Data        map[string]any `json:"data"`
		ErrorStatus string         `json:"error_status"`
	}
	if err := json.Unmarshal(r.Body, &summaries); err != nil || r.Code != 200 || summaries[id].Status != "success" ||
		summaries[id].Data["name"] != "Support" || summaries["agent_unknown"].ErrorStatus != "agent_not_found" {
		t.Fatalf("summaries: %d %s", r.Code, r.Body)
	}

	// PATCH merges nested configuration and keeps system_prompt in step.
	r = call(t, s, "PATCH", "/v1/convai/agents/"+id, adminKey, `{"name":"Support 2","conversation_config":{"agent":{"prompt":{"prompt":"Be brief."}}}}`)
	if r.Code != 200 || !strings.Contains(string(r.Body), `"system_prompt":"Be brief."`) || !strings.Contains(string(r.Body), `"first_message":"Hi"`) || !strings.Contains(string(r.Body), `"voice_id":"v1"`) {
		t.Fatalf("patch: %d %s", r.Code, r.Body)
	}
	r = call(t, s, "PATCH", "/v1/convai/agents/"+id, adminKey, `{"system_prompt":"Be precise."}`)
	if !strings.Contains(string(r.Body), `"prompt":{"prompt":"Be precise."}`) {
		t.Fatalf("system_prompt patch: %s", r.Body)
	}

	// Validation: 422 with the field's location.
	for body, loc := range map[string]string{
		`{"name":""}`:                `["body","name"]`,
		`{"tags":"x"}`:               `["body","tags"]`,
		`{"conversation_config":[]}`: `["body","conversation_config"]`,
		`{"agent_type":"robot"}`:     `["body","agent_type"]`,
		`{"system_prompt":"a","conversation_config":{"agent":{"prompt":{"prompt":"b"}}}}`: `["body","system_prompt"]`,
	} {
		r := call(t, s, "POST", "/v1/convai/agents/create", adminKey, body)
		if r.Code != 422 || !strings.Contains(string(r.Body), `"loc":`+loc) {
			t.Errorf("%s: %d %s, want 422 at %s", body, r.Code, r.Body, loc)
		}
	}

	// Idempotency-Key: a retried create returns the first agent.
	first := call(t, s, "POST", "/v1/convai/agents/create", adminKey, `{"name":"Once"}`, "Idempotency-Key", "create-once-1")
	again := call(t, s, "POST", "/v1/convai/agents/create", adminKey, `{"name":"Once"}`, "Idempotency-Key", "create-once-1")
	if first.JSON(t)["agent_id"] != again.JSON(t)["agent_id"] {
		t.Fatalf("retry made another agent: %s vs %s", first.Body, again.Body)
	}
	if r := call(t, s, "GET", "/v1/convai/agents?search=once", adminKey, ""); strings.Count(string(r.Body), `"agent_id"`) != 1 {
		t.Fatalf("retried create listed twice: %s", r.Body)
	}

	// DELETE: 204, then gone.
	if r := call(t, s, "DELETE", "/v1/convai/agents/"+id, adminKey, ""); r.Code != 204 {
		t.Fatalf("delete: %d %s", r.Code, r.Body)
	}
	wantError(t, call(t, s, "GET", "/v1/convai/agents/"+id, adminKey, ""), 404, "agent_not_found")
	if r := call(t, s, "GET", "/v1/convai/agents/list", adminKey, ""); strings.Contains(string(r.Body), id) {
		t.Fatal("deleted agent still listed")
	}
}

func TestAgentListingPagination(t *testing.T) {
	t.Parallel()
	s := startAdmin(t)
	var ids []string
	for i := range 23 {
		ids = append(ids, createAgent(t, s, adminKey, fmt.Sprintf(`{"name":"Agent %02d"}`, i)))
	}
	type page struct {
		Agents []struct {
			AgentID string `json:"agent_id"`
			Name    string `json:"name"`
		} `json:"agents"`
		NextCursor *string `json:"next_cursor"`
		HasMore    bool    `json:"has_more"`
	}
	walk := func(query string) []string {
		var seen []string
		cursor := ""
		for range 20 {
			q := query
			if cursor != "" {
				q += "&cursor=" + url.QueryEscape(cursor)
			}
			r := call(t, s, "GET", "/v1/convai/agents?"+q, adminKey, "")
			var p page
			if err := json.Unmarshal(r.Body, &p); err != nil || r.Code != 200 {
				t.Fatalf("page: %d %s", r.Code, r.Body)
			}
			for _, a := range p.Agents {
				seen = append(seen, a.AgentID)
			}
			if !p.HasMore {
				if p.NextCursor != nil {
					t.Fatal("next_cursor on the last page")
				}
				return seen
			}
			cursor = *p.NextCursor
		}
		t.Fatal("pagination does not end")
		return nil
	}
	// Newest first, every agent exactly once.
	got := walk("page_size=7")
	if len(got) != len(ids) {
		t.Fatalf("paged %d agents, want %d", len(got), len(ids))
	}
	for i, id := range got {
		if id != ids[len(ids)-1-i] {
			t.Fatalf("position %d: %s, want %s (newest first)", i, id, ids[len(ids)-1-i])
		}
	}
	byName := walk("page_size=5&sort_by=name")
	if len(byName) != len(ids) || byName[0] != ids[0] {
		t.Fatalf("sort_by=name: %v", byName)
	}
	if n := len(walk("page_size=4&search=AGENT%201")); n != 10 { // Agent 10..19
		t.Fatalf("case-insensitive search found %d, want 10", n)
	}

	for _, bad := range []string{"page_size=0", "page_size=101", "page_size=abc"} {
		r := call(t, s, "GET", "/v1/convai/agents?"+bad, adminKey, "")
		if r.Code != 422 || !strings.Contains(string(r.Body), `"loc":["query","page_size"]`) {
			t.Errorf("%s: %d %s", bad, r.Code, r.Body)
		}
	}
	r := call(t, s, "GET", "/v1/convai/agents?page_size=2", adminKey, "")
	var p page
	_ = json.Unmarshal(r.Body, &p)
	cur := *p.NextCursor
	forged := cur[:len(cur)-2] + map[bool]string{true: "AA", false: "BB"}[!strings.HasSuffix(cur, "AA")]
	for _, q := range []string{"cursor=" + url.QueryEscape(forged), "cursor=not-a-cursor", "search=x&cursor=" + url.QueryEscape(cur)} {
		r := call(t, s, "GET", "/v1/convai/agents?page_size=2&"+q, adminKey, "")
		if r.Code != 422 || !strings.Contains(string(r.Body), `"loc":["query","cursor"]`) {
			t.Errorf("%s: %d %s", q, r.Code, r.Body)
		}
	}
}

// The trace of the request that caused an event travels with the event.
func TestEventsCarryTheRequestTrace(t *testing.T) {
	t.Parallel()
	s := start(t, t.TempDir(), func(c *Config) { c.BootstrapAdminKey = adminKey })
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	r := call(t, s, "POST", "/v1/convai/agents/create", adminKey, `{"name":"traced"}`, "traceparent", tp)
	id := r.JSON(t)["agent_id"].(string)
	msg := lastAgentEvent(t, s, id)
	if got := msg.Header.Get("traceparent"); got != tp {
		t.Fatalf("event traceparent %q, want %q", got, tp)
	}
	if msg.Header.Get("Voiceai-Event-Type") != "agents.agent_created" || msg.Header.Get("Voiceai-Workspace-Id") != "ws_default" {
		t.Fatalf("event headers: %v", msg.Header)
	}
}

// A second platform on a data directory in use is refused at start,
// naming the directory, rather than opening the same streams and store
// and losing acknowledged writes.
func TestASecondPlatformOnADataDirectoryIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start(t, dir, nil)
	second, err := Start(context.Background(), TestConfig(dir, testenv.StoreProcess), slog.New(slog.DiscardHandler), nil)
	if err == nil {
		_ = second.Close()
		t.Fatal("a second platform started on a data directory in use")
	}
	if !errors.Is(err, dirlock.ErrInUse) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("the second platform: %v, want ErrInUse naming %s", err, dir)
	}
}
