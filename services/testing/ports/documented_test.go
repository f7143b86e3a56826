package ports

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	events "github.com/voiceai-platform/voiceai/proto-events"
	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/api/apitest"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/testing/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/app/conversationtest"
)

// memoryService is the service's router over the memory adapters, with
// agent_1 in workspace ws_1, at a clock that stands still until a test
// moves now. Every request is the caller's, an admin of ws_1.
type memoryService struct {
	app    *app.App
	now    time.Time
	caller principal.Caller
	send   func(method, path, body string) *httptest.ResponseRecorder
}

func newMemoryService(t *testing.T) *memoryService {
	t.Helper()
	ctx := context.Background()
	s := &memoryService{now: time.Unix(1_700_000_000, 0)}
	clock := func() time.Time { return s.now }
	p := memory.NewPorts(clock)
	s.app = app.New(p.Ports(), memory.NewIndex(), slog.New(slog.DiscardHandler), clock)
	subject, _ := events.AgentSubject("ws_1", "agent_1")
	meta := esproto.Meta(ctx, "ws_1", "", s.now)
	if _, err := esproto.Append(ctx, p.Agents, subject, 0, meta, &agentsv1.AgentCreated{Meta: meta,
		Agent: &agentsv1.Agent{AgentId: "agent_1", WorkspaceId: "ws_1", Name: "Front desk"}}); err != nil {
		t.Fatal(err)
	}
	h := httpx.WithPrincipal(api.Serve("testing", &Handlers{App: s.app}))
	s.caller = principal.Caller{Principal: principal.Principal{WorkspaceID: "ws_1", UserID: "u_1", Permissions: []string{"all"}}}
	s.send = func(method, path, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		s.caller.Principal.SetHeaders(req.Header)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	return s
}

// do sends a request that must succeed, and returns its answer.
func (s *memoryService) do(t *testing.T, method, path, body string) []byte {
	t.Helper()
	rec := s.send(method, path, body)
	if rec.Code >= 300 {
		t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
	}
	return rec.Body.Bytes()
}

// idOf is the member of a JSON object answer called "id".
func idOf(t *testing.T, answer []byte) string {
	t.Helper()
	var v struct{ ID string }
	if err := json.Unmarshal(answer, &v); err != nil || v.ID == "" {
		t.Fatalf("no id in %s", answer)
	}
	return v.ID
}

// documentedParameter is the description of the document's query
// parameter called key (schemas.yaml parameters).
func documentedParameter(t *testing.T, key string) string {
	t.Helper()
	b, err := api.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Parameters map[string]struct{ Description string }
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Components.Parameters[key].Description
}

// The invocation listing's start_time and end_time are inclusive, as the
// reference has them, and the document says so: an invocation created in
// the very second either names is listed.
func TestInvocationTimeBoundsAreInclusiveAsDocumented(t *testing.T) {
	s := newMemoryService(t)
	test := idOf(t, s.do(t, "POST", "/v1/convai/agent-testing/create", `{"type":"llm","name":"Hours","success_condition":"states the hours"}`))
	s.do(t, "POST", "/v1/convai/agents/agent_1/run-tests", `{"tests":[{"test_id":"`+test+`"}]}`)
	at := s.now.Unix()
	for query, want := range map[string]int{
		fmt.Sprintf("start_time=%d&end_time=%d", at, at): 1,
		fmt.Sprintf("end_time=%d", at-1):                 0,
		fmt.Sprintf("start_time=%d", at+1):               0,
	} {
		var page struct{ Results []any }
		if err := json.Unmarshal(s.do(t, "GET", "/v1/convai/test-invocations?"+query, ""), &page); err != nil || len(page.Results) != want {
			t.Errorf("?%s: %d invocations (%v), want %d", query, len(page.Results), err, want)
		}
	}
	for key, inclusive := range map[string]string{"start_time": "at or after it", "end_time": "at or before it"} {
		if d := documentedParameter(t, key); !strings.Contains(d, inclusive) {
			t.Errorf("the document's %s says %q: not %q", key, d, inclusive)
		}
	}
}

// checkDocumented fails t unless answer is valid against the schema
// called name and carries nothing it does not declare.
func checkDocumented(t *testing.T, what, name string, answer []byte) {
	t.Helper()
	if err := api.CheckJSON(name, answer); err != nil {
		t.Errorf("%s: %v\n%s", what, err, answer)
	}
	extra, err := apitest.Undeclared(name, answer)
	if err != nil {
		t.Fatal(err)
	}
	if len(extra) > 0 {
		t.Errorf("%s carries what %s does not declare: %v", what, name, extra)
	}
}

// What GET answers for a test of each type, an invocation (which asked
// for cached model answers and failed its bucketing) and the messages of
// every run are the document's shapes, and carry no field it lacks.
func TestAnswersDeclareWhatTheyCarry(t *testing.T) {
	s := newMemoryService(t)
	history := `"chat_history":[{"role":"user","message":"When are you open?","time_in_call_secs":2,"source_medium":"audio"}]`
	tests := map[string]string{
		"llm": `{"type":"llm","name":"Hours",` + history + `,"success_condition":"states the hours",
		  "success_examples":[{"response":"Nine to five.","type":"success"}],"failure_examples":[{"response":"No idea.","type":"failure"}],
		  "dynamic_variables":{"city":"Leeds"},"conversation_initiation_source":"unknown","environment":"staging",
		  "latency_budget":{"turn_p95_ms":3000}}`,
		"tool": `{"type":"tool","name":"Looks up the order",` + history + `,"check_any_tool_matches":true,
		  "tool_call_parameters":{"parameters":[{"path":"order_id","eval":{"type":"exact","expected_value":"4521"}}],
		    "referenced_tool":{"id":"get_order_status","type":"webhook"},"verify_absence":false}}`,
		"simulation": `{"type":"simulation","name":"Rebooks a flight","success_conditions":["rebooks","is polite"],
		  "simulation_scenario":"A caller missed a connection.","simulation_max_turns":6,
		  "tool_mock_config":{"mocking_strategy":"selected","fallback_strategy":"raise_error","mocked_tool_ids":["lookup"]},
		  "tool_mock_overrides":{"lookup":[{"mock_result":"{\"ok\":true}","is_error":false,
		    "parameter_conditions":[{"path":"id","eval":{"type":"anything"}}]}]}}`,
		"from a conversation": conversationtest.FromConversation(4, ""),
	}
	var ids []string
	for what, body := range tests {
		path := "/v1/convai/agent-testing/create"
		if what == "from a conversation" {
			path = "/v1/convai/agent-testing/from-conversation"
		}
		test := idOf(t, s.do(t, "POST", path, body))
		ids = append(ids, `{"test_id":"`+test+`"}`)
		checkDocumented(t, "the "+what+" test", "Test", s.do(t, "GET", "/v1/convai/agent-testing/"+test, ""))
	}
	inv := idOf(t, s.do(t, "POST", "/v1/convai/agents/agent_1/run-tests",
		`{"tests":[`+strings.Join(ids, ",")+`],"repeat_count":2,"cache_model_responses":true}`))
	s.do(t, "POST", "/v1/convai/test-invocations/"+inv+"/cancel", "")
	answer := s.do(t, "GET", "/v1/convai/test-invocations/"+inv, "")
	for _, field := range []string{`"bucketing_error":`, `"cache_model_responses":true`} {
		if !strings.Contains(string(answer), field) {
			t.Fatalf("the invocation lacks %s: %s", field, answer)
		}
	}
	checkDocumented(t, "the invocation", "Invocation", answer)

	// A run's messages: every field of spec 2.4, and those the reference
	// adds that a message carries through.
	for _, m := range []string{agentReply, `[{"role":"user","message":"Hi","time_in_call_secs":1,"platform_event":"user_turn_timeout","id":"msg_1"}]`} {
		var full []json.RawMessage
		if err := json.Unmarshal(fullMessages([]byte(m)), &full); err != nil {
			t.Fatal(err)
		}
		for _, msg := range full {
			checkDocumented(t, "a run's message", "Message", msg)
		}
	}
}
