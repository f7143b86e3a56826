package ports_test

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// fe is a compact expected field error.
type fe struct {
	loc []any
	msg string
	typ string
}

// validate checks a test body as a create meets it: the schema at the
// edge, then the app; it returns the field errors, sorted by loc.
func validate(t *testing.T, body string) apperr.ValidationErrors {
	t.Helper()
	_, _, err := parseTest([]byte(body))
	if err == nil {
		return nil
	}
	var ve apperr.ValidationErrors
	if !errors.As(err, &ve) {
		t.Fatalf("got %T (%v), want apperr.ValidationErrors", err, err)
	}
	slices.SortStableFunc(ve, func(a, b apperr.FieldError) int { return strings.Compare(fmt.Sprint(a.Loc), fmt.Sprint(b.Loc)) })
	return ve
}

// validChat is a chat history every test below may reuse.
const validChat = `[{"role":"user","message":"What are your opening hours?","time_in_call_secs":3},
	{"role":"agent","message":"Let me check.","time_in_call_secs":4,
	 "tool_calls":[{"request_id":"r1","tool_name":"hours","params_as_json":"{}","tool_has_been_called":true}]}]`

func repeatJSON(item string, n int) string {
	return "[" + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + "]"
}

func TestTestBodiesThatAreValid(t *testing.T) {
	cases := map[string]string{
		"llm with condition": `{"type":"llm","name":"Opening hours","chat_history":` + validChat + `,
			"success_condition":"The agent states the opening hours"}`,
		"llm with success examples only": `{"type":"llm","name":"x",
			"success_examples":[{"response":"We open at nine.","type":"success"}]}`,
		"llm with failure examples only": `{"type":"llm","name":"x",
			"failure_examples":[{"response":"I do not know.","type":"failure"}]}`,
		"llm with everything": `{"type":"llm","name":"x","success_condition":"c",
			"success_examples":[{"response":"a","type":"success"},{"response":" b ","type":"success"}],
			"failure_examples":[{"response":"b","type":"failure"}],
			"dynamic_variables":{"customer":"Ann","n":3},"parent_folder_id":"tfld_1"}`,
		"llm name of 200 multibyte runes": `{"type":"llm","name":"` + strings.Repeat("é", domain.MaxNameLen) + `","success_condition":"c"}`,
		"llm name of 1 rune":              `{"type":"llm","name":"é","success_condition":"c"}`,
		"llm with an empty condition and examples (empty is none)": `{"type":"llm","name":"x","success_condition":"",
			"success_examples":[{"response":"We open at nine.","type":"success"}]}`,
		"llm with 500 chat turns": `{"type":"llm","name":"x","success_condition":"c","chat_history":` +
			repeatJSON(`{"role":"user","message":"hi","time_in_call_secs":1}`, domain.MaxChatHistory) + `}`,
		"llm with 100 examples": `{"type":"llm","name":"x","success_examples":` +
			repeatJSON(`{"response":"a","type":"success"}`, 100) + `}`,
		"tool with referenced tool": `{"type":"tool","name":"Books a table","chat_history":` + validChat + `,
			"tool_call_parameters":{"referenced_tool":{"id":"book_table","type":"client"}}}`,
		"tool with every eval type": `{"type":"tool","name":"t","tool_call_parameters":{
			"referenced_tool":{"id":"book_table","type":"client"},
			"parameters":[
				{"path":"a","eval":{"type":"anything"}},
				{"path":"b","eval":{"type":"exact","expected_value":"4"}},
				{"path":"c.d","eval":{"type":"llm","description":"a weekday"}},
				{"path":"e","eval":{"type":"regex","pattern":"^fri(day)?$"}}]}}`,
		"tool with empty expectation (no referenced tool)": `{"type":"tool","name":"t","tool_call_parameters":{}}`,
		"tool verifying absence":                           `{"type":"tool","name":"t","tool_call_parameters":{"referenced_tool":{"id":"end_call","type":"system"},"verify_absence":true}}`,
		"simulation with success_conditions":               `{"type":"simulation","name":"s","success_conditions":["books a table"]}`,
		"simulation with legacy success_condition":         `{"type":"simulation","name":"s","success_condition":"books a table"}`,
		"simulation with 1 turn":                           `{"type":"simulation","name":"s","success_conditions":["c"],"simulation_max_turns":1}`,
		"simulation with 50 turns":                         `{"type":"simulation","name":"s","success_conditions":["c"],"simulation_max_turns":50}`,
		"llm with both latency budgets at their bounds": `{"type":"llm","name":"x","success_condition":"c",
			"latency_budget":{"first_token_p95_ms":1,"turn_p95_ms":600000}}`,
		"llm with a first-token budget only": `{"type":"llm","name":"x","success_condition":"c","latency_budget":{"first_token_p95_ms":800}}`,
		"llm with a null turn budget":        `{"type":"llm","name":"x","success_condition":"c","latency_budget":{"first_token_p95_ms":800,"turn_p95_ms":null}}`,
		"simulation with an empty budget":    `{"type":"simulation","name":"s","success_conditions":["c"],"latency_budget":{}}`,
		"tool with a null budget":            `{"type":"tool","name":"t","tool_call_parameters":{},"latency_budget":null}`,
		"simulation with tool mocks": `{"type":"simulation","name":"s","success_conditions":["c"],"simulation_scenario":"p",
			"tool_mock_config":{"mocking_strategy":"selected","fallback_strategy":"call_real_tool","mocked_tool_ids":["tool_1"]},
			"tool_mock_overrides":{"tool_1":[{"mock_result":"ok"},{"parameter_conditions":[{"path":"a","eval":{"type":"regex","pattern":"^x"}}],
			  "mock_result":"no","is_error":true}]}}`,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			if errs := validate(t, body); errs != nil {
				t.Fatalf("valid test rejected: %+v", errs)
			}
		})
	}
}

func TestTestBodiesRefusedAtTheirFields(t *testing.T) {
	const (
		required = "Field required"
		missing  = "missing"
		literal  = "literal_error"
		blank    = "String should have a character other than white space"
	)
	tp := func(params string) string {
		return `{"type":"tool","name":"t","tool_call_parameters":{"parameters":[` + params + `]}}`
	}
	cases := []struct {
		name string
		body string
		want []fe
	}{
		{"type missing", `{"name":"x","success_condition":"c"}`,
			[]fe{{loc: []any{"body", "type"}, msg: required, typ: missing}}},
		{"type folder is only a listing filter", `{"type":"folder","name":"x"}`,
			[]fe{{loc: []any{"body", "type"}, msg: "Input should be 'llm', 'tool' or 'simulation'", typ: "enum"}}},
		{"type unknown", `{"type":"LLM","name":"x","success_condition":"c"}`,
			[]fe{{loc: []any{"body", "type"}, msg: "Input should be 'llm', 'tool' or 'simulation'", typ: "enum"}}},
		{"latency budgets out of range, both named", `{"type":"llm","name":"x","success_condition":"c",
			"latency_budget":{"first_token_p95_ms":0,"turn_p95_ms":600001}}`,
			[]fe{{loc: []any{"body", "latency_budget", "first_token_p95_ms"}, msg: "Input should be greater than or equal to 1", typ: "greater_than_equal"},
				{loc: []any{"body", "latency_budget", "turn_p95_ms"}, msg: "Input should be less than or equal to 600000", typ: "less_than_equal"}}},
		{"a negative latency budget", `{"type":"llm","name":"x","success_condition":"c","latency_budget":{"turn_p95_ms":-5}}`,
			[]fe{{loc: []any{"body", "latency_budget", "turn_p95_ms"}, msg: "Input should be greater than or equal to 1", typ: "greater_than_equal"}}},
		{"name missing", `{"type":"llm","success_condition":"c"}`,
			[]fe{{loc: []any{"body", "name"}, msg: required, typ: missing}}},
		{"name null", `{"type":"llm","name":null,"success_condition":"c"}`,
			[]fe{{loc: []any{"body", "name"}, msg: "Input should be a valid string", typ: "string_type"}}},
		{"name empty", `{"type":"llm","name":"","success_condition":"c"}`,
			[]fe{{loc: []any{"body", "name"}, msg: "String should have at least 1 character", typ: "string_too_short"}}},
		{"name of white space only", `{"type":"llm","name":"   ","success_condition":"c"}`,
			[]fe{{loc: []any{"body", "name"}, msg: blank, typ: "string_too_short"}}},
		{"name of no-break and ideographic spaces", `{"type":"llm","name":"\u00a0\u3000","success_condition":"c"}`,
			[]fe{{loc: []any{"body", "name"}, msg: blank, typ: "string_too_short"}}},
		{"success_condition of white space only", `{"type":"llm","name":"x","success_condition":"   "}`,
			[]fe{{loc: []any{"body", "success_condition"}, msg: blank, typ: "string_too_short"}}},
		{"success_condition of white space beside examples", `{"type":"llm","name":"x","success_condition":"\t\n",
			"success_examples":[{"response":"a","type":"success"}]}`,
			[]fe{{loc: []any{"body", "success_condition"}, msg: blank, typ: "string_too_short"}}},
		{"a simulation's blank condition in the list", `{"type":"simulation","name":"s","success_conditions":["books a table"," "]}`,
			[]fe{{loc: []any{"body", "success_conditions", 1}, msg: blank, typ: "string_too_short"}}},
		{"blank examples", `{"type":"llm","name":"x","success_condition":"c",
			"success_examples":[{"response":"a","type":"success"},{"response":"  ","type":"success"}],
			"failure_examples":[{"response":"","type":"failure"}]}`,
			[]fe{{loc: []any{"body", "failure_examples", 0, "response"}, msg: blank, typ: "string_too_short"},
				{loc: []any{"body", "success_examples", 1, "response"}, msg: blank, typ: "string_too_short"}}},
		{"name 201 runes", `{"type":"llm","name":"` + strings.Repeat("a", domain.MaxNameLen+1) + `","success_condition":"c"}`,
			[]fe{{loc: []any{"body", "name"}, msg: "String should have at most 200 characters", typ: "string_too_long"}}},
		{"chat history over 500", `{"type":"llm","name":"x","success_condition":"c","chat_history":` +
			repeatJSON(`{"role":"user","message":"hi","time_in_call_secs":1}`, domain.MaxChatHistory+1) + `}`,
			[]fe{{loc: []any{"body", "chat_history"}, msg: "List should have at most 500 items", typ: "too_long"}}},
		{"chat role system", `{"type":"llm","name":"x","success_condition":"c","chat_history":[
			{"role":"user","message":"hi","time_in_call_secs":1},{"role":"system","message":"hi","time_in_call_secs":1}]}`,
			[]fe{{loc: []any{"body", "chat_history", 1, "role"}, msg: "Input should be 'user' or 'agent'", typ: "enum"}}},
		{"chat role missing", `{"type":"llm","name":"x","success_condition":"c","chat_history":[{"message":"hi","time_in_call_secs":1}]}`,
			[]fe{{loc: []any{"body", "chat_history", 0, "role"}, msg: required, typ: missing}}},
		{"chat time missing", `{"type":"llm","name":"x","success_condition":"c","chat_history":[
			{"role":"user","message":"hi","time_in_call_secs":0},{"role":"agent","message":"hi"}]}`,
			[]fe{{loc: []any{"body", "chat_history", 1, "time_in_call_secs"}, msg: required, typ: missing}}},
		{"chat tool call without name", `{"type":"llm","name":"x","success_condition":"c","chat_history":[
			{"role":"agent","time_in_call_secs":1,"tool_calls":[{"request_id":"r1","tool_name":"ok","params_as_json":"{}","tool_has_been_called":true},{"request_id":"r2","params_as_json":"{}","tool_has_been_called":true}]}]}`,
			[]fe{{loc: []any{"body", "chat_history", 0, "tool_calls", 1, "tool_name"}, msg: required, typ: missing}}},
		{"chat tool call and result short of what the public API requires", `{"type":"llm","name":"x","success_condition":"c","chat_history":[
			{"role":"agent","time_in_call_secs":1,"tool_calls":[{"tool_name":"ok","request_id":"r1","params_as_json":"{}"}],
			 "tool_results":[{"request_id":"r1","tool_name":"ok","result_value":"","tool_has_been_called":true}],"feedback":{"score":"like"}}]}`,
			[]fe{
				{loc: []any{"body", "chat_history", 0, "feedback", "time_in_call_secs"}, msg: required, typ: missing},
				{loc: []any{"body", "chat_history", 0, "tool_calls", 0, "tool_has_been_called"}, msg: required, typ: missing},
				{loc: []any{"body", "chat_history", 0, "tool_results", 0, "is_error"}, msg: required, typ: missing},
			}},
		{"integers of spec 2.4 given with fractions", `{"type":"llm","name":"x","success_condition":"c","chat_history":[
			{"role":"agent","time_in_call_secs":1.5,"source_event_id":2.5,"multivoice_message":{"parts":[{"text":"a","voice_label":"v","time_in_call_secs":0.3}]},
			 "tool_results":[{"request_id":"r","tool_name":"t","result_value":"v","is_error":false,"tool_has_been_called":true,
			   "dynamic_variable_updates":[{"variable_name":"x","updated_at":1.5}]}]}]}`,
			[]fe{
				{loc: []any{"body", "chat_history", 0, "multivoice_message", "parts", 0, "time_in_call_secs"}, msg: "Input should be a valid integer", typ: "int_type"},
				{loc: []any{"body", "chat_history", 0, "source_event_id"}, msg: "Input should be a valid integer", typ: "int_type"},
				{loc: []any{"body", "chat_history", 0, "tool_results", 0, "dynamic_variable_updates", 0, "updated_at"}, msg: "Input should be a valid integer", typ: "int_type"},
			}},
		{"success example without response", `{"type":"llm","name":"x","success_examples":[{"response":"a","type":"success"},{"type":"success"}]}`,
			[]fe{{loc: []any{"body", "success_examples", 1, "response"}, msg: required, typ: missing}}},
		{"success example of type failure", `{"type":"llm","name":"x","success_examples":[{"response":"a","type":"failure"}]}`,
			[]fe{{loc: []any{"body", "success_examples", 0, "type"}, msg: "Input should be 'success'", typ: literal}}},
		{"failure example of type success", `{"type":"llm","name":"x","failure_examples":[{"response":"a","type":"success"}]}`,
			[]fe{{loc: []any{"body", "failure_examples", 0, "type"}, msg: "Input should be 'failure'", typ: literal}}},
		{"failure example without response or type", `{"type":"llm","name":"x","failure_examples":[{}]}`,
			[]fe{
				{loc: []any{"body", "failure_examples", 0, "response"}, msg: required, typ: missing},
				{loc: []any{"body", "failure_examples", 0, "type"}, msg: required, typ: missing},
			}},
		{"101 success examples", `{"type":"llm","name":"x","success_examples":` +
			repeatJSON(`{"response":"a","type":"success"}`, 101) + `}`,
			[]fe{{loc: []any{"body", "success_examples"}, msg: "List should have at most 100 items", typ: "too_long"}}},
		{"101 failure examples", `{"type":"llm","name":"x","success_condition":"c","failure_examples":` +
			repeatJSON(`{"response":"a","type":"failure"}`, 101) + `}`,
			[]fe{{loc: []any{"body", "failure_examples"}, msg: "List should have at most 100 items", typ: "too_long"}}},
		{"llm without condition or examples", `{"type":"llm","name":"x"}`,
			[]fe{{loc: []any{"body", "success_condition"}, msg: "An llm test needs a success_condition or examples", typ: missing}}},
		{"llm with empty condition and empty example lists", `{"type":"llm","name":"x","success_condition":"","success_examples":[],"failure_examples":[]}`,
			[]fe{{loc: []any{"body", "success_condition"}, msg: "An llm test needs a success_condition or examples", typ: missing}}},
		{"llm success_conditions (plural) do not count", `{"type":"llm","name":"x","success_conditions":["c"]}`,
			[]fe{{loc: []any{"body", "success_condition"}, msg: "An llm test needs a success_condition or examples", typ: missing}}},
		{"simulation without conditions", `{"type":"simulation","name":"s","success_condition":"","success_conditions":[]}`,
			[]fe{{loc: []any{"body", "success_conditions"}, msg: "At least one of success_condition or success_conditions is required", typ: missing}}},
		{"simulation with 0 turns", `{"type":"simulation","name":"s","success_conditions":["c"],"simulation_max_turns":0}`,
			[]fe{{loc: []any{"body", "simulation_max_turns"}, msg: "Input should be greater than or equal to 1", typ: "greater_than_equal"}}},
		{"simulation with 51 turns", `{"type":"simulation","name":"s","success_conditions":["c"],"simulation_max_turns":51}`,
			[]fe{{loc: []any{"body", "simulation_max_turns"}, msg: "Input should be less than or equal to 50", typ: "less_than_equal"}}},
		{"mock strategies unknown", `{"type":"simulation","name":"s","success_conditions":["c"],
			"tool_mock_config":{"mocking_strategy":"some","fallback_strategy":"ignore"}}`,
			[]fe{
				{loc: []any{"body", "tool_mock_config", "fallback_strategy"}, msg: "Input should be 'call_real_tool' or 'raise_error'", typ: "enum"},
				{loc: []any{"body", "tool_mock_config", "mocking_strategy"}, msg: "Input should be 'all', 'selected' or 'none'", typ: "enum"},
			}},
		{"mock without result, mock condition without expected value", `{"type":"simulation","name":"s","success_conditions":["c"],
			"tool_mock_overrides":{"t2":[{"mock_result":"x","parameter_conditions":[{"path":"a","eval":{"type":"exact"}}]}],"t1":[{}]}}`,
			[]fe{
				{loc: []any{"body", "tool_mock_overrides", "t1", 0, "mock_result"}, msg: required, typ: missing},
				{loc: []any{"body", "tool_mock_overrides", "t2", 0, "parameter_conditions", 0, "eval", "expected_value"}, msg: required, typ: missing},
			}},
		{"tool without tool_call_parameters", `{"type":"tool","name":"t"}`,
			[]fe{{loc: []any{"body", "tool_call_parameters"}, msg: "A tool test needs tool_call_parameters", typ: missing}}},
		{"referenced tool without id", `{"type":"tool","name":"t","tool_call_parameters":{"referenced_tool":{"type":"client"}}}`,
			[]fe{{loc: []any{"body", "tool_call_parameters", "referenced_tool", "id"}, msg: required, typ: missing}}},
		{"referenced tool with empty id", `{"type":"tool","name":"t","tool_call_parameters":{"referenced_tool":{"id":""}}}`,
			[]fe{{loc: []any{"body", "tool_call_parameters", "referenced_tool", "id"}, msg: "String should have at least 1 character", typ: "string_too_short"}}},
		{"parameter without path", tp(`{"path":"a","eval":{"type":"anything"}},{"eval":{"type":"anything"}}`),
			[]fe{{loc: []any{"body", "tool_call_parameters", "parameters", 1, "path"}, msg: required, typ: missing}}},
		{"parameter with empty path", tp(`{"path":"","eval":{"type":"anything"}}`),
			[]fe{{loc: []any{"body", "tool_call_parameters", "parameters", 0, "path"}, msg: "String should have at least 1 character", typ: "string_too_short"}}},
		{"parameter without eval", tp(`{"path":"a"}`),
			[]fe{{loc: []any{"body", "tool_call_parameters", "parameters", 0, "eval"}, msg: required, typ: missing}}},
		{"eval of unknown type", tp(`{"path":"a","eval":{"type":"fuzzy","expected_value":"x"}}`),
			[]fe{{loc: []any{"body", "tool_call_parameters", "parameters", 0, "eval", "type"}, msg: "Input should be 'anything', 'exact', 'llm' or 'regex'", typ: "enum"}}},
		{"exact without expected_value", tp(`{"path":"a","eval":{"type":"exact"}}`),
			[]fe{{loc: []any{"body", "tool_call_parameters", "parameters", 0, "eval", "expected_value"}, msg: required, typ: missing}}},
		{"llm eval without description", tp(`{"path":"a","eval":{"type":"llm"}}`),
			[]fe{{loc: []any{"body", "tool_call_parameters", "parameters", 0, "eval", "description"}, msg: required, typ: missing}}},
		{"regex without pattern", tp(`{"path":"a","eval":{"type":"regex"}}`),
			[]fe{{loc: []any{"body", "tool_call_parameters", "parameters", 0, "eval", "pattern"}, msg: required, typ: missing}}},
		{"regex with invalid pattern", tp(`{"path":"a","eval":{"type":"regex","pattern":"(unclosed"}}`),
			[]fe{{loc: []any{"body", "tool_call_parameters", "parameters", 0, "eval", "pattern"}, msg: "Pattern is not a valid regular expression", typ: "value_error"}}},
		{"several errors are all reported at once", `{"chat_history":[{"role":"bot"}],"failure_examples":[{"response":"a","type":"x"}]}`,
			[]fe{
				{loc: []any{"body", "chat_history", 0, "role"}, msg: "Input should be 'user' or 'agent'", typ: "enum"},
				{loc: []any{"body", "chat_history", 0, "time_in_call_secs"}, msg: required, typ: missing},
				{loc: []any{"body", "failure_examples", 0, "type"}, msg: "Input should be 'failure'", typ: literal},
				{loc: []any{"body", "name"}, msg: required, typ: missing},
				{loc: []any{"body", "type"}, msg: required, typ: missing},
			}},
		{"errors in two parameters keep their indices", tp(`{"path":"a","eval":{"type":"regex","pattern":"("}},{"path":"b","eval":{"type":"regex","pattern":"["}}`),
			[]fe{
				{loc: []any{"body", "tool_call_parameters", "parameters", 0, "eval", "pattern"}, msg: "Pattern is not a valid regular expression", typ: "value_error"},
				{loc: []any{"body", "tool_call_parameters", "parameters", 1, "eval", "pattern"}, msg: "Pattern is not a valid regular expression", typ: "value_error"},
			}},
		{"the schema's errors come before the app's rules are judged", tp(`{"path":"a","eval":{"type":"exact"}},{"path":"b","eval":{"type":"regex","pattern":"["}}`),
			[]fe{
				{loc: []any{"body", "tool_call_parameters", "parameters", 0, "eval", "expected_value"}, msg: required, typ: missing},
			}},
		{"a string over 20,000 characters", `{"type":"llm","name":"x","success_condition":"` + strings.Repeat("c", domain.MaxTextLen+1) + `"}`,
			[]fe{{loc: []any{"body", "success_condition"}, msg: "String should have at most 20000 characters", typ: "string_too_long"}}},
		{"a mock for a tool id, refused where it is", `{"type":"simulation","name":"s","success_conditions":["c"],"tool_mock_overrides":{"t1":[{"mock_result":7}]}}`,
			[]fe{{loc: []any{"body", "tool_mock_overrides", "t1", 0, "mock_result"}, msg: "Input should be a valid string", typ: "string_type"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := validate(t, c.body)
			want := make(apperr.ValidationErrors, len(c.want))
			for i, w := range c.want {
				want[i] = apperr.FieldError{Loc: w.loc, Msg: w.msg, Type: w.typ}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("errors:\n got  %+v\n want %+v", got, want)
			}
			// Every loc starts at the body, as the 422 shape requires.
			for _, e := range got {
				if len(e.Loc) == 0 || e.Loc[0] != "body" {
					t.Fatalf("loc %v does not start with body", e.Loc)
				}
			}
		})
	}
}

// A latency budget is read into the typed definition the runners hold
// runs to, and kept in the stored definition (so GET shows it back and
// an invocation pins it with the test).
func TestALatencyBudgetIsReadAndKept(t *testing.T) {
	in, raw, err := parseTest([]byte(`{"type":"llm","name":"x","success_condition":"c","latency_budget":{"first_token_p95_ms":800,"turn_p95_ms":2500}}`))
	if err != nil {
		t.Fatal(err)
	}
	b := in.LatencyBudget
	if b == nil || b.FirstTokenP95Ms == nil || *b.FirstTokenP95Ms != 800 || b.TurnP95Ms == nil || *b.TurnP95Ms != 2500 {
		t.Fatalf("budget %+v", b)
	}
	def, err := domain.ParseDefinition(domain.Definition(raw))
	if err != nil || def.LatencyBudget == nil || *def.LatencyBudget.FirstTokenP95Ms != 800 || *def.LatencyBudget.TurnP95Ms != 2500 {
		t.Fatalf("stored definition %+v (%v)", def.LatencyBudget, err)
	}
}
