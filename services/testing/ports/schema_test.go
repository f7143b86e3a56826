package ports

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/api/apitest"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// Every body below is refused before the app would read a store, so the
// router serves over an app that has none.
func refusing(t *testing.T, method, path, body string) (int, map[string]string) {
	t.Helper()
	h := httpx.WithPrincipal(api.Serve("testing", &Handlers{App: &app.App{}}))
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	principal.Principal{WorkspaceID: "ws_1", UserID: "u_1", Permissions: []string{"all"}}.SetHeaders(req.Header)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var m struct {
		Detail []struct {
			Loc  []any  `json:"loc"`
			Type string `json:"type"`
		} `json:"detail"`
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &m)
	locs := map[string]string{}
	for _, d := range m.Detail {
		b, _ := json.Marshal(d.Loc)
		locs[string(b)] = d.Type
	}
	return rec.Code, locs
}

// The bounds the handlers and the domain used to check by hand, now said
// by each operation's schema, still refuse their bad input with 422 at
// the field, through the service's own router.
func TestBadTestingBodiesAreRefusedWhereTheyAreWrong(t *testing.T) {
	const (
		tests  = "/v1/convai/agent-testing"
		agent  = "/v1/convai/agents/agent_1/run-tests"
		resub  = "/v1/convai/test-invocations/tinv_1/resubmit"
		folder = "/v1/convai/agent-testing/folders"
	)
	many := func(item string, n int) string {
		return "[" + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + "]"
	}
	for _, c := range []struct {
		name, method, path, body, loc, typ string
	}{
		{"test without type", "POST", tests + "/create", `{"name":"n","success_condition":"c"}`, `["body","type"]`, "missing"},
		{"test name too long", "POST", tests + "/create", `{"type":"llm","name":"` + strings.Repeat("n", 201) + `","success_condition":"c"}`, `["body","name"]`, "string_too_long"},
		{"test replaced with an unknown type", "PUT", tests + "/test_1", `{"type":"folder","name":"n"}`, `["body","type"]`, "enum"},
		{"chat history over 500 turns", "POST", tests + "/create", `{"type":"llm","name":"n","success_condition":"c","chat_history":` +
			many(`{"role":"user","time_in_call_secs":1}`, 501) + `}`, `["body","chat_history"]`, "too_long"},
		{"simulation turns over 50", "POST", tests + "/create", `{"type":"simulation","name":"n","success_conditions":["c"],"simulation_max_turns":51}`,
			`["body","simulation_max_turns"]`, "less_than_equal"},
		{"parent folder not an id", "POST", tests + "/create", `{"type":"llm","name":"n","success_condition":"c","parent_folder_id":"../x"}`,
			`["body","parent_folder_id"]`, "string_pattern_mismatch"},
		{"exact parameter without its value", "POST", tests + "/create", `{"type":"tool","name":"n","tool_call_parameters":{"parameters":[{"path":"a","eval":{"type":"exact"}}]}}`,
			`["body","tool_call_parameters","parameters",0,"eval","expected_value"]`, "missing"},
		{"regex that does not compile (the app's rule)", "POST", tests + "/create", `{"type":"tool","name":"n","tool_call_parameters":{"parameters":[{"path":"a","eval":{"type":"regex","pattern":"("}}]}}`,
			`["body","tool_call_parameters","parameters",0,"eval","pattern"]`, "value_error"},
		{"a first-token budget of 0 ms", "POST", tests + "/create", `{"type":"llm","name":"n","success_condition":"c","latency_budget":{"first_token_p95_ms":0}}`,
			`["body","latency_budget","first_token_p95_ms"]`, "greater_than_equal"},
		{"a turn budget over ten minutes", "PUT", tests + "/test_1", `{"type":"llm","name":"n","success_condition":"c","latency_budget":{"turn_p95_ms":600001}}`,
			`["body","latency_budget","turn_p95_ms"]`, "less_than_equal"},
		{"a budget in seconds", "POST", tests + "/create", `{"type":"llm","name":"n","success_condition":"c","latency_budget":{"turn_p95_ms":2.5}}`,
			`["body","latency_budget","turn_p95_ms"]`, "int_type"},
		{"a budget of a metric there is none of", "POST", tests + "/create", `{"type":"llm","name":"n","success_condition":"c","latency_budget":{"first_token_p50_ms":100}}`,
			`["body","latency_budget","first_token_p50_ms"]`, "extra_forbidden"},
		{"a budget that is no object", "POST", tests + "/create", `{"type":"llm","name":"n","success_condition":"c","latency_budget":800}`,
			`["body","latency_budget"]`, "model_type"},
		{"no tests to run", "POST", agent, `{"tests":[]}`, `["body","tests"]`, "too_short"},
		{"a test id that is no id", "POST", agent, `{"tests":[{"test_id":"a b"}]}`, `["body","tests",0,"test_id"]`, "string_pattern_mismatch"},
		{"repeat count over 50", "POST", agent, `{"tests":[{"test_id":"t"}],"repeat_count":51}`, `["body","repeat_count"]`, "less_than_equal"},
		{"an override without its configuration", "POST", agent, `{"tests":[{"test_id":"t"}],"agent_config_override":{"platform_settings":{}}}`,
			`["body","agent_config_override","conversation_config"]`, "missing"},
		{"a branch other than main (the app's rule)", "POST", agent, `{"tests":[{"test_id":"t"}],"branch_id":"dev"}`, `["body","branch_id"]`, "value_error"},
		{"a workflow override (the app's rule)", "POST", agent, `{"tests":[{"test_id":"t"}],"agent_config_override":{"conversation_config":{},"workflow":{"nodes":{}}}}`,
			`["body","agent_config_override","workflow"]`, "value_error"},
		{"resubmit with no runs", "POST", resub, `{"test_run_ids":[],"agent_id":"agent_1"}`, `["body","test_run_ids"]`, "too_short"},
		{"resubmit without the agent", "POST", resub, `{"test_run_ids":["r_1"]}`, `["body","agent_id"]`, "missing"},
		{"summaries of too many tests", "POST", tests + "/summaries", `{"test_ids":` + many(`"t"`, 1001) + `}`, `["body","test_ids"]`, "too_long"},
		{"summaries of a repeated test (the app's rule)", "POST", tests + "/summaries", `{"test_ids":["t","t"]}`, `["body","test_ids",1]`, "value_error"},
		{"moving nothing", "POST", tests + "/bulk-move", `{"entity_ids":[]}`, `["body","entity_ids"]`, "too_short"},
		{"moving into a folder that is no id", "POST", tests + "/bulk-move", `{"entity_ids":["t"],"move_to":"a/b"}`, `["body","move_to"]`, "string_pattern_mismatch"},
		{"a folder without a name", "POST", folder, `{}`, `["body","name"]`, "missing"},
		{"a folder named with spaces only", "PATCH", folder + "/tfld_1", `{"name":"\u00a0 "}`, `["body","name"]`, "string_too_short"},
		{"a regression without its conversation", "POST", tests + "/from-conversation",
			`{"agent_id":"agent_1","transcript":[{"role":"agent","time_in_call_secs":0}],"turn_index":0}`, `["body","conversation_id"]`, "missing"},
		{"a regression from a user turn (the app's rule)", "POST", tests + "/from-conversation",
			`{"agent_id":"agent_1","conversation_id":"c","transcript":[{"role":"user","time_in_call_secs":0}],"turn_index":0}`, `["body","turn_index"]`, "value_error"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, locs := refusing(t, c.method, c.path, c.body)
			if code != http.StatusUnprocessableEntity || locs[c.loc] != c.typ {
				t.Fatalf("answered %d %v, want 422 with %s at %s", code, locs, c.typ, c.loc)
			}
		})
	}
}

// The limits the service relies on (the default name's clip, the
// regression's turn bound, the run planner's sizes) are the schema's.
func TestSchemasSayTheDomainsLimits(t *testing.T) {
	apitest.WantInt(t, domain.MaxNameLen, "TestName", "maxLength")
	apitest.WantInt(t, domain.MaxNameLen, "FolderName", "maxLength")
	apitest.WantInt(t, domain.MaxChatHistory, "TestCreate", "properties", "chat_history", "maxItems")
	apitest.WantInt(t, domain.MaxSimulationTurns, "TestCreate", "properties", "simulation_max_turns", "maximum")
	apitest.WantInt(t, domain.MaxLatencyBudgetMs, "LatencyBudget", "properties", "first_token_p95_ms", "maximum")
	apitest.WantInt(t, domain.MaxLatencyBudgetMs, "LatencyBudget", "properties", "turn_p95_ms", "maximum")
	apitest.WantInt(t, domain.MaxTestsPerRun, "RunTests", "properties", "tests", "maxItems")
	apitest.WantInt(t, domain.MaxRepeatCount, "RunTests", "properties", "repeat_count", "maximum")
	apitest.WantInt(t, domain.MaxTestsPerRun*domain.MaxRepeatCount, "Resubmit", "properties", "test_run_ids", "maxItems")
	apitest.WantStrings(t, []string{domain.TypeLLM, domain.TypeTool, domain.TypeSimulation}, "TestCreate", "properties", "type", "enum")
}
