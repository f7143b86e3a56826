package domain

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
)

// MainBranch is the one branch an agent has; a regression test records it.
const MainBranch = "main"

// quoteLen bounds the production reply quoted in a default condition or
// name, so the condition stays readable and within MaxTextLen.
const quoteLen = 1000

// FromConversation is the body of POST
// /v1/convai/agent-testing/from-conversation: a production conversation
// and the index of the agent turn that went wrong.
type FromConversation struct {
	AgentID          *string   `json:"agent_id"`
	ConversationID   *string   `json:"conversation_id"`
	Transcript       []Message `json:"transcript"`
	TurnIndex        *int      `json:"turn_index"`
	Name             *string   `json:"name"`
	SuccessCondition *string   `json:"success_condition"`
	ParentFolderID   *string   `json:"parent_folder_id"`
	TicketID         *string   `json:"ticket_id"`
}

// ToolResult is one entry of a transcript message's tool_results (the
// fields every result model shares that a mock needs).
type ToolResult struct {
	RequestID   string  `json:"request_id"`
	ToolName    string  `json:"tool_name"`
	ResultValue *string `json:"result_value"`
	IsError     bool    `json:"is_error"`
}

// Validate checks what the API schema (TestFromConversation, checked at
// the edge) cannot say: that each message's tool_results are tool
// results, and that turn_index names an agent turn of the transcript
// with at most MaxChatHistory turns before it. Loc entries start with
// "body". The agent and the folder are checked by the caller, which can
// read them.
func (in *FromConversation) Validate(v *apperr.Validator) {
	for i, m := range in.Transcript {
		if _, err := m.Results(); err != nil {
			v.Add("Input should be a list of tool results", "list_type", "body", "transcript", i, "tool_results")
		}
	}
	switch {
	case in.TurnIndex == nil:
		v.Add("Field required", "missing", "body", "turn_index")
	case *in.TurnIndex < 0 || *in.TurnIndex >= len(in.Transcript):
		v.Add(fmt.Sprintf("turn_index %d is out of range: the transcript has %d messages (0 to %d)", *in.TurnIndex, len(in.Transcript), len(in.Transcript)-1),
			"value_error", "body", "turn_index")
	case in.Transcript[*in.TurnIndex].Role != "agent":
		v.Add(fmt.Sprintf("turn_index %d is a user turn: it must point at the agent turn that went wrong", *in.TurnIndex), "value_error", "body", "turn_index")
	case *in.TurnIndex > MaxChatHistory:
		v.Add(fmt.Sprintf("turn_index should be at most %d: the messages before it become the test's chat_history", MaxChatHistory), "less_than_equal", "body", "turn_index")
	}
}

// Results decodes the message's tool_results (absent or null: none).
func (m Message) Results() ([]ToolResult, error) {
	if len(m.ToolResults) == 0 || string(m.ToolResults) == "null" {
		return nil, nil
	}
	var out []ToolResult
	err := json.Unmarshal(m.ToolResults, &out)
	return out, err
}

// ReplyEnd is the end (exclusive) of the failing agent turn in
// production: the message at turn_index and the agent messages that
// follow it before the user speaks again (its tool results, what it said
// after them).
func (in *FromConversation) ReplyEnd() int {
	end := *in.TurnIndex + 1
	for end < len(in.Transcript) && in.Transcript[end].Role == "agent" {
		end++
	}
	return end
}

// RegressionTest is the llm test for a validated request: raw holds the
// transcript messages as posted, so every public field passes through to
// chat_history and original_agent_reply. The result is a create-test body.
func (in *FromConversation) RegressionTest(raw []json.RawMessage) map[string]any {
	at, end := *in.TurnIndex, in.ReplyEnd()
	meta := map[string]any{"conversation_id": *in.ConversationID, "agent_id": *in.AgentID, "branch_id": MainBranch,
		"original_agent_reply": raw[at:end]}
	if node := workflowNode(in.Transcript[at]); node != "" {
		meta["workflow_node_id"] = node
	}
	if in.TicketID != nil {
		meta["ticket_id"] = *in.TicketID // traceability: the ticket that reported the turn
	}
	test := map[string]any{"type": TypeLLM, "name": in.defaultName(), "chat_history": raw[:at:at],
		"success_condition": in.defaultCondition(), "from_conversation_metadata": meta}
	if in.Name != nil {
		test["name"] = *in.Name
	}
	if in.SuccessCondition != nil {
		test["success_condition"] = *in.SuccessCondition
	}
	if in.ParentFolderID != nil {
		test["parent_folder_id"] = *in.ParentFolderID
	}
	if mocks := ProductionMocks(in.Transcript[:end]); len(mocks) > 0 {
		// Every tool is mocked and an unmatched call is an error: a
		// regression test must never reach a real tool (a booking, a
		// payment) and must see what production saw.
		test["tool_mock_config"] = map[string]any{"mocking_strategy": MockAll, "fallback_strategy": FallbackRaiseError}
		test["tool_mock_overrides"] = mocksJSON(mocks)
	}
	return test
}

func ptr[T any](v T) *T { return &v }

// mocksJSON is mocks in the public shape, without the null fields the
// typed form would write.
func mocksJSON(mocks map[string][]ToolMock) map[string]any {
	out := make(map[string]any, len(mocks))
	for name, list := range mocks {
		l := make([]map[string]any, len(list))
		for i, m := range list {
			conds := make([]map[string]any, len(m.ParameterConditions))
			for j, p := range m.ParameterConditions {
				conds[j] = map[string]any{"path": *p.Path, "eval": map[string]any{"type": p.Eval.Type, "expected_value": *p.Eval.ExpectedValue}}
			}
			l[i] = map[string]any{"parameter_conditions": conds, "mock_result": *m.MockResult, "is_error": m.IsError}
		}
		out[name] = l
	}
	return out
}

func workflowNode(m Message) string {
	var md struct {
		WorkflowNodeID string `json:"workflow_node_id"`
	}
	_ = json.Unmarshal(m.AgentMetadata, &md)
	return md.WorkflowNodeID
}

// defaultName names the test after the user's last words before the
// failing turn, and where it comes from.
func (in *FromConversation) defaultName() string {
	at := *in.TurnIndex
	where := fmt.Sprintf("%s, turn %d", *in.ConversationID, at)
	for i := at - 1; i >= 0; i-- {
		if m := in.Transcript[i]; m.Role == "user" && m.Message != nil && strings.TrimSpace(*m.Message) != "" {
			return clip(fmt.Sprintf("Regression: %q (%s)", clip(strings.TrimSpace(*m.Message), 80), where), MaxNameLen)
		}
	}
	return clip("Regression: "+where, MaxNameLen)
}

// defaultCondition asks for what a QA engineer checks by hand on a
// reported turn: a correct answer to the user, consistent with what the
// tools returned, without the reported mistake (quoted, so the judge
// knows what went wrong).
func (in *FromConversation) defaultCondition() string {
	reported := "was reported as wrong"
	if in.TicketID != nil {
		reported = "was reported as wrong in ticket " + *in.TicketID
	}
	return fmt.Sprintf("The agent answers the user's last message correctly: its reply is consistent with the conversation so far "+
		"and with every tool result it received, and it does not repeat the mistake of the reply it gave in production, which %s: %q",
		reported, clip(in.originalReply(), quoteLen))
}

// originalReply is what the agent said in the failing turn, or the tool
// calls it made when it said nothing.
func (in *FromConversation) originalReply() string {
	var said, calls []string
	for _, m := range in.Transcript[*in.TurnIndex:in.ReplyEnd()] {
		if m.Message != nil && strings.TrimSpace(*m.Message) != "" {
			said = append(said, strings.TrimSpace(*m.Message))
		}
		for _, c := range m.ToolCalls {
			calls = append(calls, "called "+c.ToolName+" with "+c.ParamsAsJSON)
		}
	}
	if len(said) > 0 {
		return strings.Join(said, " ")
	}
	return strings.Join(calls, "; ")
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// ProductionMocks turns the tool results of a transcript into
// tool_mock_overrides, keyed by tool name (the runner's mocker takes a
// tool's id or its name), so a run answers each tool call with what
// production returned. A tool whose calls all had the same arguments
// gets one mock that answers any call. A tool called with different
// arguments gets one mock per argument set, matched exactly on its
// top-level scalar arguments (the newest result of each), then one that
// answers any other call with the tool's newest result: a rerun that
// phrases an argument differently still sees production data. A result
// whose call is not in the transcript answers any call.
func ProductionMocks(transcript []Message) map[string][]ToolMock {
	calls := map[string]ToolCall{} // request_id → call
	type seen struct {
		conds  []ToolParam
		result string
		isErr  bool
	}
	byTool := map[string][]seen{} // distinct argument sets, in first-seen order
	latest := map[string]seen{}
	var tools []string
	for _, m := range transcript {
		for _, c := range m.ToolCalls {
			if c.RequestID != "" {
				calls[c.RequestID] = c
			}
		}
		results, _ := m.Results() // validated by the caller
		for _, r := range results {
			c, called := calls[r.RequestID]
			name := r.ToolName
			if name == "" {
				name = c.ToolName
			}
			if name == "" || r.ResultValue == nil {
				continue // nothing to key or answer a mock with
			}
			s := seen{result: *r.ResultValue, isErr: r.IsError}
			if called && r.RequestID != "" {
				s.conds = exactConditions(c.ParamsAsJSON)
			}
			if _, ok := latest[name]; !ok {
				tools = append(tools, name)
			}
			latest[name] = s
			list := byTool[name]
			if i := slices.IndexFunc(list, func(o seen) bool { return sameConditions(o.conds, s.conds) }); i >= 0 {
				list[i] = s
			} else {
				byTool[name] = append(list, s)
			}
		}
	}
	out := make(map[string][]ToolMock, len(tools))
	for _, name := range tools {
		last := latest[name]
		catchAll := ToolMock{ParameterConditions: []ToolParam{}, MockResult: ptr(last.result), IsError: last.isErr}
		if len(byTool[name]) == 1 {
			out[name] = []ToolMock{catchAll}
			continue
		}
		for _, s := range byTool[name] {
			if len(s.conds) > 0 {
				out[name] = append(out[name], ToolMock{ParameterConditions: s.conds, MockResult: ptr(s.result), IsError: s.isErr})
			}
		}
		out[name] = append(out[name], catchAll)
	}
	return out
}

// exactConditions are "exact" parameter conditions on every top-level
// scalar argument of a call, rendered as the runner renders arguments
// (strings as they are, numbers and booleans as JSON). Keys holding a '.'
// are left out: a condition path is dot-separated.
func exactConditions(paramsJSON string) []ToolParam {
	var args map[string]any
	if json.Unmarshal([]byte(paramsJSON), &args) != nil {
		return nil
	}
	var out []ToolParam
	for _, k := range slices.Sorted(maps.Keys(args)) {
		var val string
		switch x := args[k].(type) {
		case string:
			val = x
		case float64, bool:
			b, _ := json.Marshal(x)
			val = string(b)
		default:
			continue
		}
		if strings.Contains(k, ".") || k == "" {
			continue
		}
		out = append(out, ToolParam{Path: ptr(k), Eval: &ParamEval{Type: "exact", ExpectedValue: ptr(val)}})
	}
	return out
}

func sameConditions(a, b []ToolParam) bool {
	return slices.EqualFunc(a, b, func(x, y ToolParam) bool {
		return *x.Path == *y.Path && *x.Eval.ExpectedValue == *y.Eval.ExpectedValue
	})
}
