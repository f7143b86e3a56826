package ports

import (
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/api/apitest"
	"github.com/voiceai-platform/voiceai/pkg/cursor"
	"github.com/voiceai-platform/voiceai/pkg/eventlog/memlog"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/agents/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/agents/app"
)

// GET /v1/convai/agents/summaries (the SDK's agents.summaries.get) maps
// each agent id asked for to the listing's row of that agent, with its
// last call, or to a failure: an id of no live agent of the workspace (a
// deleted one, another workspace's, a malformed one) is a 404
// agent_not_found there, not for the whole answer.
func TestSummariesAnswerEachAgentAsTheListingDoes(t *testing.T) {
	agents, calls := memory.NewReadModel(), memory.NewCallLog()
	a := app.New(memlog.New(), agents, memory.NewSecrets(agents), testkit.Sealer(t), func(string) bool { return true },
		slog.New(slog.DiscardHandler), func() time.Time { return time.Unix(1_800_000_000, 0) })
	a.Cursors, a.Calls = cursor.NewCodec([]byte("0123456789abcdef0123456789abcdef")), calls
	h := httpx.WithPrincipal(api.Serve("agents", &Handlers{App: a}))
	send := func(ws, method, path, body string) (int, []byte) {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		principal.Principal{WorkspaceID: ws, UserID: "user_1", Permissions: []string{"convai_read", "convai_write"}}.SetHeaders(req.Header)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.Bytes()
	}
	create := func(ws, body string) string {
		t.Helper()
		code, b := send(ws, "POST", "/v1/convai/agents/create", body)
		var created struct {
			AgentID string `json:"agent_id"`
		}
		if err := json.Unmarshal(b, &created); code != 201 || err != nil {
			t.Fatalf("create: %d %s", code, b)
		}
		return created.AgentID
	}
	desk := create("ws_a", `{"name":"Front desk","tags":["dental"],"conversation_config":{"tts":{"voice_id":"v1"}},"platform_settings":{"archived":true}}`)
	gone := create("ws_a", `{"name":"Old desk"}`)
	other := create("ws_b", `{"name":"Elsewhere"}`)
	if code, b := send("ws_a", "DELETE", "/v1/convai/agents/"+gone, ""); code != 204 {
		t.Fatalf("delete: %d %s", code, b)
	}
	if err := calls.Record(t.Context(), []app.Call{{WorkspaceID: "ws_a", AgentID: desk, AtUnix: 1_799_999_000}}); err != nil {
		t.Fatal(err)
	}

	code, b := send("ws_a", "GET", "/v1/convai/agents/summaries?agent_ids="+desk+"&agent_ids="+gone+"&agent_ids="+other+
		"&agent_ids=not%20an%20id&agent_ids="+desk, "")
	if code != 200 {
		t.Fatalf("summaries: %d %s", code, b)
	}
	if err := api.CheckJSON("AgentSummaries", b); err != nil {
		t.Errorf("the answer is not the document's: %v\n%s", err, b)
	}
	if extra, err := apitest.Undeclared("AgentSummaries", b); err != nil || len(extra) > 0 {
		t.Errorf("the answer carries what the document lacks: %v %v", extra, err)
	}
	var got map[string]map[string]any
	if err := json.Unmarshal(b, &got); err != nil || len(got) != 4 {
		t.Fatalf("summaries of 4 distinct ids: %s", b)
	}
	_, listing := send("ws_a", "GET", "/v1/convai/agents?archived=true", "")
	var page struct{ Agents []any }
	_ = json.Unmarshal(listing, &page)
	if len(page.Agents) != 1 || !reflect.DeepEqual(got[desk], map[string]any{"status": "success", "data": page.Agents[0]}) {
		t.Errorf("%s: %v, want the listing's row %v", desk, got[desk], page.Agents)
	}
	if data, _ := got[desk]["data"].(map[string]any); data["last_call_time_unix_secs"] != float64(1_799_999_000) || data["archived"] != true {
		t.Errorf("%s: %v, want its last call and archived", desk, got[desk])
	}
	for _, id := range []string{gone, other, "not an id"} {
		if f := got[id]; f["status"] != "failure" || f["error_code"] != float64(404) || f["error_status"] != "agent_not_found" || f["error_message"] == "" {
			t.Errorf("%s: %v, want a 404 agent_not_found failure", id, f)
		}
	}

	if code, b := send("ws_a", "GET", "/v1/convai/agents/summaries", ""); code != 200 || strings.TrimSpace(string(b)) != "{}" {
		t.Errorf("summaries of no id: %d %s, want {}", code, b)
	}
	many := strings.Repeat("&agent_ids="+desk, 101)
	if code, b := send("ws_a", "GET", "/v1/convai/agents/summaries?"+many[1:], ""); code != 422 {
		t.Errorf("summaries of 101 ids: %d %s, want 422", code, b)
	}
}
