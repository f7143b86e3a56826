// Package domain holds the rules of agent tests, folders, invocations and
// runs, free of NATS and Mongo.
package domain

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
)

// Test types.
const (
	TypeLLM        = "llm"
	TypeTool       = "tool"
	TypeSimulation = "simulation"
	TypeFolder     = "folder" // listing filter only
)

// Limits. The bounds of a request's fields are the API schema's
// (pkg/api/schemas.yaml); these are the ones the service itself relies
// on, and the schema test checks that the two agree.
const (
	MaxNameLen     = 200    // a test's name (TestName); a regression's default name is clipped to it
	MaxTextLen     = 20_000 // any other string of a test (messages, conditions, examples): not a schema bound
	MaxChatHistory = 500    // a test's chat_history; a regression's turn_index at most
	MaxTestsPerRun = 5000   // run-tests' tests
	MaxRepeatCount = 50     // run-tests' repeat_count

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
	ExpectedValue *string `json:"expected_value,omitempty"`
	Description   *string `json:"description,omitempty"`
	Pattern       *string `json:"pattern,omitempty"`
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
	Type string  `json:"type,omitempty"`
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
	// LatencyBudget is an extension of the public test (nil: none).
	LatencyBudget *LatencyBudget `json:"latency_budget"`
}

// MaxTurns is simulation_max_turns, or its default.
func (in *TestInput) MaxTurns() int {
	if in.SimulationMaxTurns == nil {
		return DefaultSimulationTurns
	}
	return *in.SimulationMaxTurns
}

// Validate checks what the API schema (TestCreate, checked at the edge
// before a body reaches the app) cannot say: that a test has what its
// type judges by, and that a regex parameter's pattern compiles (as
// Go's regexp, which the runners use). Loc entries start with "body".
func (in *TestInput) Validate(v *apperr.Validator) {
	typ := deref(in.Type)
	hasCond := deref(in.SuccessCondition) != ""
	switch typ {
	case TypeLLM:
		v.Check(hasCond || len(in.SuccessExamples) > 0 || len(in.FailureExamples) > 0,
			"An llm test needs a success_condition or examples", "missing", "body", "success_condition")
	case TypeSimulation:
		v.Check(hasCond || len(in.SuccessConditions) > 0,
			"At least one of success_condition or success_conditions is required", "missing", "body", "success_conditions")
	}
	if tp := in.ToolCallParameters; tp != nil {
		for i, p := range tp.Parameters {
			checkPattern(v, p, "body", "tool_call_parameters", "parameters", i)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(in.ToolMockOverrides)) {
		for i, m := range in.ToolMockOverrides[id] {
			for j, p := range m.ParameterConditions {
				checkPattern(v, p, "body", "tool_mock_overrides", id, i, "parameter_conditions", j)
			}
		}
	}
	if typ == TypeTool {
		v.Check(in.ToolCallParameters != nil, "A tool test needs tool_call_parameters", "missing", "body", "tool_call_parameters")
	}
}

// checkPattern checks that a regex parameter's pattern compiles.
func checkPattern(v *apperr.Validator, p ToolParam, loc ...any) {
	if p.Eval == nil || p.Eval.Type != "regex" || p.Eval.Pattern == nil {
		return
	}
	if _, err := regexp.Compile(*p.Eval.Pattern); err != nil {
		v.Add("Pattern is not a valid regular expression", "value_error", append(loc[:len(loc):len(loc)], "eval", "pattern")...)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
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
