package ports_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/api/apitest"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/pkg/ids"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// The fuzz targets below feed untrusted request bodies to the decode and
// validate steps of the testing API, as a request meets them (the edge's
// check against the operation's schema, then the handler's), and check that they never panic, that every rejection is a client
// error (400/413, or 422 with a loc under "body"), and that whatever is
// accepted is accepted again after a re-encoding.

// checkRejection fails unless err is a client error a handler would write
// as a 4xx.
func checkRejection(t *testing.T, err error) {
	t.Helper()
	var ve apperr.ValidationErrors
	var ae *apperr.Error
	switch {
	case errors.As(err, &ve):
		if len(ve) == 0 {
			t.Fatal("empty validation errors")
		}
		for _, fe := range ve {
			if len(fe.Loc) == 0 || fe.Loc[0] != "body" || fe.Msg == "" || fe.Type == "" {
				t.Fatalf("malformed field error %+v", fe)
			}
		}
	case errors.As(err, &ae):
		if httpx.StatusOf(ae) != http.StatusBadRequest && httpx.StatusOf(ae) != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d for a bad body: %v", httpx.StatusOf(ae), err)
		}
	default:
		t.Fatalf("error %T is not a client error: %v", err, err)
	}
}

// ---- POST /v1/convai/agents/{agent_id}/run-tests ----

// runTests decodes body as the run-tests handler does and runs the
// command's validation. The agent id is empty, which no agent has, so a
// body that passes validation ends in agent_not_found before any store is
// used: accepted reports exactly that.
func runTests(t *testing.T, body []byte) (in app.RunTestsInput, accepted bool, err error) {
	t.Helper()
	if in, err = apitest.Decode[app.RunTestsInput](api.RunTests, body); err != nil {
		return in, false, err
	}
	_, err = (&app.App{}).RunTests(context.Background(), principal.In("ws_fuzz"), "", in)
	var ae *apperr.Error
	if errors.As(err, &ae) && httpx.StatusOf(ae) == http.StatusNotFound && ae.Status == "agent_not_found" {
		return in, true, nil
	}
	if err == nil {
		t.Fatal("RunTests succeeded without an agent")
	}
	return in, false, err
}

func FuzzRunTestsBody(f *testing.F) {
	for _, s := range []string{
		`{"tests":[{"test_id":"test_1"}]}`,
		`{"tests":[{"test_id":"test_1","workflow_node_id":"n1","root_folder_id":"tfld_1","root_folder_name":"Folder"},{"test_id":"test_2"}],
		  "repeat_count":3,"branch_id":"br_1"}`,
		`{"tests":[{"test_id":"t"}],"agent_config_override":{"conversation_config":{"agent":{"first_message":"hi"}},"platform_settings":{}}}`,
		`{"tests":[{"test_id":"t"}],"agent_config_override":{"conversation_config":[],"platform_settings":"x"}}`,
		`{"tests":[{"test_id":"t"}],"agent_config_override":{"platform_settings":null}}`,
		`{"tests":[{"test_id":"t"}],"repeat_count":0}`,
		`{"tests":[{"test_id":"t"}],"repeat_count":51}`,
		`{"tests":[{"test_id":"t"}],"repeat_count":1.5}`,
		`{"tests":[{"test_id":"t"}],"repeat_count":"two"}`,
		`{"tests":[{"test_id":""},{}]}`,
		`{"tests":[]}`,
		`{"tests":null}`,
		`{}`,
		`[]`,
		`null`,
		`{"tests":[`,
		`{"tests":[{"test_id":"t"}]} {}`,
		``,
		"\x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		in, accepted, err := runTests(t, body)
		if !accepted {
			checkRejection(t, err)
			return
		}
		// What passed validation satisfies the rules the command relies on.
		if len(in.Tests) < 1 || len(in.Tests) > domain.MaxTestsPerRun {
			t.Fatalf("accepted tests %v", in.Tests)
		}
		for i, ref := range in.Tests {
			if !ids.Valid(ref.TestID) {
				t.Fatalf("accepted test %d with test_id %q", i, ref.TestID)
			}
		}
		if in.RepeatCount != nil && (*in.RepeatCount < 1 || *in.RepeatCount > domain.MaxRepeatCount) {
			t.Fatalf("accepted repeat_count %d", *in.RepeatCount)
		}
		if o := in.AgentConfigOverride; o != nil && (len(o.ConversationConfig) == 0 || o.ConversationConfig[0] != '{') {
			t.Fatalf("accepted conversation_config %s", o.ConversationConfig)
		}
		// Accepted input re-validates: re-encoded, it decodes to the same
		// command and is accepted again.
		again, err := json.Marshal(in)
		if err != nil {
			t.Fatalf("accepted input does not encode: %v", err)
		}
		in2, accepted2, err := runTests(t, again)
		if !accepted2 {
			t.Fatalf("re-encoded input rejected: %v\n%s", err, again)
		}
		third, _ := json.Marshal(in2)
		if !bytes.Equal(again, third) {
			t.Fatalf("decoding is not stable:\n%s\n%s", again, third)
		}
	})
}

// ---- POST /v1/convai/agent-testing/create and PUT .../{test_id} ----

func FuzzTestBody(f *testing.F) {
	for _, s := range []string{
		`{"type":"llm","name":"Opening hours","chat_history":[{"role":"user","message":"What are your opening hours?","time_in_call_secs":3}],
		  "success_condition":"The agent states the opening hours",
		  "success_examples":[{"response":"We are open nine to five.","type":"success"}],
		  "failure_examples":[{"response":"I do not know.","type":"failure"}],"dynamic_variables":{"customer":"Ann","n":3}}`,
		`{"type":"tool","name":"Books a table","chat_history":[{"role":"user","message":"Book for 4","time_in_call_secs":1,
		    "tool_calls":[{"request_id":"r","tool_name":"x","params_as_json":"{}"}],"tool_results":[{"a":1}],"agent_metadata":{"agent_id":"a"}}],
		  "tool_call_parameters":{"referenced_tool":{"id":"book_table","type":"client"},"verify_absence":false,
		    "parameters":[{"path":"guests","eval":{"type":"exact","expected_value":"4"}},{"path":"date","eval":{"type":"regex","pattern":"^fri"}},
		      {"path":"a.b","eval":{"type":"llm","description":"d"}},{"path":"c","eval":{"type":"anything"}}]},"check_any_tool_matches":true}`,
		`{"type":"simulation","name":"s","success_conditions":["a","b"],"simulation_scenario":"x","simulation_max_turns":5}`,
		`{"id":"test_1","type":"llm","name":"n","parent_folder_id":"tfld_1","access_info":{},"success_condition":"c","from_conversation_metadata":{"conversation_id":"c"}}`,
		`{"type":"llm","name":"n","success_condition":"c","environment":null,"failure_examples":null}`,
		`{"type":"tool","name":"t","tool_call_parameters":{"parameters":[{"path":"a","eval":{"type":"regex","pattern":"("}}]}}`,
		`{"type":"tool","name":"t","tool_call_parameters":{"parameters":[{"path":"a"},{"eval":{"type":"nope"}}]}}`,
		`{"type":"llm","name":"","chat_history":[{"role":"bot"}]}`,
		`{"type":"llm","name":"n","chat_history":"x"}`,
		`{"type":"llm","name":"n","simulation_max_turns":1e400}`,
		`{"type":1}`,
		`{}`,
		`[]`,
		`null`,
		`{"type":"llm"`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		in, raw, err := parseTest(body)
		if err != nil {
			checkRejection(t, err)
			return
		}
		// CreateTest and UpdateTest dereference these.
		if in.Name == nil || in.Type == nil {
			t.Fatalf("accepted a test without name or type: %s", body)
		}
		if *in.Type != domain.TypeLLM && *in.Type != domain.TypeTool && *in.Type != domain.TypeSimulation {
			t.Fatalf("accepted type %q", *in.Type)
		}

		// Accepted input re-validates: re-encoded, it is accepted again and
		// decodes to the same test.
		again, err := json.Marshal(in)
		if err != nil {
			t.Fatalf("accepted input does not encode: %v", err)
		}
		in2, _, err := parseTest(again)
		if err != nil {
			t.Fatalf("re-encoded input rejected: %v\n%s", err, again)
		}
		third, _ := json.Marshal(in2)
		if !bytes.Equal(again, third) {
			t.Fatalf("decoding is not stable:\n%s\n%s", again, third)
		}

		// The definition stored for the test is what runners read back:
		// with the record's name and type it must still be a valid test.
		if raw == nil {
			t.Fatalf("accepted a body that is not a JSON object; its definition would be lost: %q", body)
		}
		def := domain.Definition(raw)
		stored, err := domain.ParseDefinition(def)
		if err != nil {
			t.Fatalf("stored definition does not parse: %v\n%s", err, def)
		}
		stored.Name, stored.Type = in.Name, in.Type
		var v apperr.Validator
		stored.Validate(&v)
		if err := v.Err(); err != nil {
			t.Fatalf("stored definition is no longer valid: %v\nbody %s\ndefinition %s", err, body, def)
		}
	})
}

// parseTest checks a test body as a create meets it: against the
// schema at the edge, then by the app.
func parseTest(body []byte) (domain.TestInput, map[string]json.RawMessage, error) {
	if _, err := apitest.Edge(api.CreateTest, body); err != nil {
		return domain.TestInput{}, nil, err
	}
	return app.ParseTest(body)
}
