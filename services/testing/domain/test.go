// Package domain holds the rules of agent tests, folders, invocations and
// runs, free of NATS and Mongo.
package domain

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"unicode/utf8"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
)

// Test types.
const (
	TypeLLM        = "llm"
	TypeTool       = "tool"
	TypeSimulation = "simulation"
	TypeFolder     = "folder" // listing filter only
)

// Limits.
const (
	MaxNameLen        = 200
	MaxTextLen        = 20_000 // any other string of a test (messages, conditions, examples)
	MaxChatHistory    = 500
	MaxExamples       = 100
	MaxTestsPerRun    = 5000
	MaxRepeatCount    = 50
	MaxTestIDsPerCall = 1000

	DefaultSimulationTurns = 5  // simulation_max_turns when absent
	MaxSimulationTurns     = 50 // simulation_max_turns at most
)

// Tool mocking strategies of a simulation (tool_mock_config).
const (
	MockAll      = "all"      // every tool is mocked (the default)
	MockSelected = "selected" // only mocked_tool_ids
	MockNone     = "none"     // no tool is mocked

	FallbackCallRealTool = "call_real_tool"
	FallbackRaiseError   = "raise_error" // the default
)

// Message is a transcript turn as a test carries it (chat_history). Only
// the fields the platform reads are typed; the rest pass through.
type Message struct {
	Role           string          `json:"role"`
	Message        *string         `json:"message"`
	TimeInCallSecs *float64        `json:"time_in_call_secs"`
	ToolCalls      []ToolCall      `json:"tool_calls"`
	ToolResults    json.RawMessage `json:"tool_results"`
	AgentMetadata  json.RawMessage `json:"agent_metadata"`
}

// ToolCall is a tool call in a transcript turn.
type ToolCall struct {
	RequestID    string `json:"request_id"`
	ToolName     string `json:"tool_name"`
	ParamsAsJSON string `json:"params_as_json"`
}

// Example is a success or failure example response.
type Example struct {
	Response *string `json:"response"`
	Type     string  `json:"type"`
}

// ParamEval is how one tool-call parameter is judged.
type ParamEval struct {
	Type          string  `json:"type"`
	ExpectedValue *string `json:"expected_value"`
	Description   *string `json:"description"`
	Pattern       *string `json:"pattern"`
}

// ToolParam names a parameter by path (dot-separated into the JSON
// arguments) and how it is judged.
type ToolParam struct {
	Path *string    `json:"path"`
	Eval *ParamEval `json:"eval"`
}

// ReferencedTool is the tool a tool test expects.
type ReferencedTool struct {
	ID   *string `json:"id"`
	Type string  `json:"type"`
}

// ToolExpectation is a tool test's tool_call_parameters.
type ToolExpectation struct {
	Parameters     []ToolParam     `json:"parameters"`
	ReferencedTool *ReferencedTool `json:"referenced_tool"`
	VerifyAbsence  bool            `json:"verify_absence"`
}

// ToolMockConfig is a simulation's tool_mock_config
// (SimulationToolMockBehaviorConfig): which tools are mocked, and what an
// unmocked or unmatched call gets.
type ToolMockConfig struct {
	MockingStrategy  *string  `json:"mocking_strategy"`
	FallbackStrategy *string  `json:"fallback_strategy"`
	MockedToolIDs    []string `json:"mocked_tool_ids"`
}

// ToolMock is one entry of tool_mock_overrides[tool_id]
// (ToolResponseMockConfig): the result of a call whose arguments meet
// every parameter condition (none: every call).
type ToolMock struct {
	ParameterConditions []ToolParam `json:"parameter_conditions"`
	MockResult          *string     `json:"mock_result"`
	IsError             bool        `json:"is_error"`
}

// TestInput is the body of a test create or update.
type TestInput struct {
	Type                         *string               `json:"type"`
	Name                         *string               `json:"name"`
	ParentFolderID               *string               `json:"parent_folder_id"`
	ChatHistory                  []Message             `json:"chat_history"`
	DynamicVariables             map[string]any        `json:"dynamic_variables"`
	SuccessCondition             *string               `json:"success_condition"`
	SuccessConditions            []string              `json:"success_conditions"`
	SuccessExamples              []Example             `json:"success_examples"`
	FailureExamples              []Example             `json:"failure_examples"`
	ToolCallParameters           *ToolExpectation      `json:"tool_call_parameters"`
	CheckAnyToolMatches          *bool                 `json:"check_any_tool_matches"`
	ConversationInitiationSource *string               `json:"conversation_initiation_source"`
	Environment                  *string               `json:"environment"`
	FromConversationMetadata     json.RawMessage       `json:"from_conversation_metadata"`
	SimulationScenario           *string               `json:"simulation_scenario"`
	SimulationMaxTurns           *int                  `json:"simulation_max_turns"`
	ToolMockConfig               *ToolMockConfig       `json:"tool_mock_config"`
	ToolMockOverrides            map[string][]ToolMock `json:"tool_mock_overrides"`
}

// MaxTurns is simulation_max_turns, or its default.
func (in *TestInput) MaxTurns() int {
	if in.SimulationMaxTurns == nil {
		return DefaultSimulationTurns
	}
	return *in.SimulationMaxTurns
}

var paramEvalTypes = map[string]bool{"anything": true, "exact": true, "llm": true, "regex": true}

// Validate checks a test body; loc entries start with "body".
func (in *TestInput) Validate(v *apperr.Validator) {
	typ := ""
	if in.Type == nil {
		v.Add("Field required", "missing", "body", "type")
	} else {
		typ = *in.Type
		v.Check(typ == TypeLLM || typ == TypeTool || typ == TypeSimulation,
			"Input should be 'llm', 'tool' or 'simulation'", "literal_error", "body", "type")
	}
	if in.Name == nil {
		v.Add("Field required", "missing", "body", "name")
	} else {
		n := utf8.RuneCountInString(*in.Name)
		v.Check(n >= 1 && n <= MaxNameLen, "String should have 1 to 200 characters", "string_length", "body", "name")
	}
	v.Check(len(in.ChatHistory) <= MaxChatHistory, "List should have at most 500 items", "too_long", "body", "chat_history")
	for i, m := range in.ChatHistory {
		v.Check(m.Role == "user" || m.Role == "agent", "Input should be 'user' or 'agent'", "literal_error", "body", "chat_history", i, "role")
		v.Check(m.TimeInCallSecs != nil, "Field required", "missing", "body", "chat_history", i, "time_in_call_secs")
		for j, tc := range m.ToolCalls {
			v.Check(tc.ToolName != "", "Field required", "missing", "body", "chat_history", i, "tool_calls", j, "tool_name")
		}
	}
	checkExamples(v, in.SuccessExamples, "success", "success_examples")
	checkExamples(v, in.FailureExamples, "failure", "failure_examples")
	hasCond := in.SuccessCondition != nil && *in.SuccessCondition != ""
	if typ == TypeLLM {
		v.Check(hasCond || len(in.SuccessExamples) > 0 || len(in.FailureExamples) > 0,
			"An llm test needs a success_condition or examples", "missing", "body", "success_condition")
	}
	if typ == TypeSimulation {
		v.Check(hasCond || len(in.SuccessConditions) > 0,
			"At least one of success_condition or success_conditions is required", "missing", "body", "success_conditions")
	}
	if tp := in.ToolCallParameters; tp != nil {
		if tp.ReferencedTool != nil {
			v.Check(tp.ReferencedTool.ID != nil && *tp.ReferencedTool.ID != "", "Field required", "missing", "body", "tool_call_parameters", "referenced_tool", "id")
		}
		for i, p := range tp.Parameters {
			checkParam(v, p, "body", "tool_call_parameters", "parameters", i)
		}
	}
	if n := in.SimulationMaxTurns; n != nil {
		v.Check(*n >= 1, "Input should be greater than or equal to 1", "greater_than_equal", "body", "simulation_max_turns")
		v.Check(*n <= MaxSimulationTurns, "Input should be less than or equal to 50", "less_than_equal", "body", "simulation_max_turns")
	}
	if mc := in.ToolMockConfig; mc != nil {
		if m := mc.MockingStrategy; m != nil {
			v.Check(*m == MockAll || *m == MockSelected || *m == MockNone,
				"Input should be 'all', 'selected' or 'none'", "literal_error", "body", "tool_mock_config", "mocking_strategy")
		}
		if f := mc.FallbackStrategy; f != nil {
			v.Check(*f == FallbackCallRealTool || *f == FallbackRaiseError,
				"Input should be 'call_real_tool' or 'raise_error'", "literal_error", "body", "tool_mock_config", "fallback_strategy")
		}
	}
	for _, id := range slices.Sorted(maps.Keys(in.ToolMockOverrides)) {
		for i, m := range in.ToolMockOverrides[id] {
			v.Check(m.MockResult != nil, "Field required", "missing", "body", "tool_mock_overrides", id, i, "mock_result")
			for j, p := range m.ParameterConditions {
				checkParam(v, p, "body", "tool_mock_overrides", id, i, "parameter_conditions", j)
			}
		}
	}
	if typ == TypeTool {
		v.Check(in.ToolCallParameters != nil, "A tool test needs tool_call_parameters", "missing", "body", "tool_call_parameters")
	}
}

// checkParam checks a tool-call parameter condition at loc.
func checkParam(v *apperr.Validator, p ToolParam, loc ...any) {
	at := func(more ...any) []any { return append(loc[:len(loc):len(loc)], more...) }
	v.Check(p.Path != nil && *p.Path != "", "Field required", "missing", at("path")...)
	if p.Eval == nil {
		v.Add("Field required", "missing", at("eval")...)
		return
	}
	if !paramEvalTypes[p.Eval.Type] {
		v.Add("Input should be 'anything', 'exact', 'llm' or 'regex'", "literal_error", at("eval", "type")...)
		return
	}
	switch p.Eval.Type {
	case "exact":
		v.Check(p.Eval.ExpectedValue != nil, "Field required", "missing", at("eval", "expected_value")...)
	case "llm":
		v.Check(p.Eval.Description != nil, "Field required", "missing", at("eval", "description")...)
	case "regex":
		if p.Eval.Pattern == nil {
			v.Add("Field required", "missing", at("eval", "pattern")...)
		} else if _, err := regexp.Compile(*p.Eval.Pattern); err != nil {
			v.Add("Pattern is not a valid regular expression", "value_error", at("eval", "pattern")...)
		}
	}
}

func checkExamples(v *apperr.Validator, ex []Example, want, field string) {
	v.Check(len(ex) <= MaxExamples, "List should have at most 100 items", "too_long", "body", field)
	for i, e := range ex {
		v.Check(e.Response != nil, "Field required", "missing", "body", field, i, "response")
		v.Check(e.Type == want, "Input should be '"+want+"'", "literal_error", "body", field, i, "type")
	}
}

// Definition is the stored definition: the body without the fields the
// test record holds on its own (id, name, type, parent_folder_id).
func Definition(raw map[string]json.RawMessage) []byte {
	out := map[string]json.RawMessage{}
	for k, val := range raw {
		switch k {
		case "id", "name", "type", "parent_folder_id", "access_info":
			continue
		}
		if string(val) == "null" {
			continue
		}
		out[k] = val
	}
	b, _ := json.Marshal(out)
	return b
}

// ParseDefinition reads a stored definition back into its typed form.
func ParseDefinition(def []byte) (TestInput, error) {
	var in TestInput
	if len(def) == 0 {
		return in, nil
	}
	err := json.Unmarshal(def, &in)
	return in, err
}
