package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"sync"
	"time"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
	"github.com/voiceai-platform/voiceai/services/testing/model"
)

// Run is everything one run attempt needs.
type Run struct {
	Invocation  *testingv1.Invocation
	Test        *testingv1.PlannedTest
	Definition  domain.TestInput
	AgentConfig []byte // conversation_config JSON for this attempt
	BranchID    string
	RunID       string
	Index       int
	Attempt     int32
	WorkerID    string
}

// Executor runs tests through a model within a time limit.
type Executor struct {
	// Model is the platform's judge model: it judges, plays the simulated
	// user, and plays the agent unless Agents picks another model.
	Model Model
	// Agents picks the model that plays each run's agent (nil: Model).
	Agents    AgentModels
	TimeLimit time.Duration    // a run's (0: two minutes)
	Now       func() time.Time // the clock runs are timed by (runtime.Deps.Clock)
	// JudgeVotes is how many verdicts a failure is judged with in all, the
	// majority deciding (0 or 1: the first verdict stands).
	JudgeVotes int
	// Cache keeps model answers for invocations that asked for it (nil:
	// no caching).
	Cache ResponseCache

	mu      sync.Mutex
	configs map[string]AgentConfig // parsed agent configurations, by their JSON
}

// timeLimit is how long a run may take: TimeLimit, or two minutes.
func (e *Executor) timeLimit() time.Duration {
	if e.TimeLimit <= 0 {
		return 2 * time.Minute
	}
	return e.TimeLimit
}

// agentConfig parses a configuration once: every run of an invocation
// shares it.
func (e *Executor) agentConfig(raw []byte) AgentConfig {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c, ok := e.configs[string(raw)]; ok {
		return c
	}
	if e.configs == nil || len(e.configs) >= 64 {
		e.configs = map[string]AgentConfig{}
	}
	c := ParseAgentConfig(raw)
	e.configs[string(raw)] = c
	return c
}

// Execute plays the agent's next turn and judges it. A run that exceeds
// the time limit or whose model keeps failing ends failed with the reason.
func (e *Executor) Execute(ctx context.Context, r Run) *testingv1.RunResult {
	inv := r.Invocation
	repeat := int(max(inv.GetRepeatCount(), 1))
	res := &testingv1.RunResult{
		RunId: r.RunID, InvocationId: inv.GetInvocationId(), WorkspaceId: inv.GetWorkspaceId(), TestId: r.Test.GetTestId(),
		TestIndex: int32(r.Index / repeat), RepeatIndex: int32(r.Index % repeat), Attempt: r.Attempt,
		StartedAtUnixMs: e.Now().UnixMilli(), WorkerId: r.WorkerID,
		Usage: &testingv1.ModelUsage{Provider: e.Model.Provider(), Model: e.Model.ModelName()},
	}
	limit := e.timeLimit()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()

	m, err := e.cast(ctx, r, int(res.RepeatIndex))
	if err != nil {
		res.Status, res.ConditionResult = domain.RunFailed, domain.ConditionUnknown
		res.Error, res.RationaleSummary = err.Error(), err.Error()
		res.AgentResponsesJson = []byte("[]")
		res.FinishedAtUnixMs = e.Now().UnixMilli()
		return res
	}
	agent := m.agent

	var usage Usage
	var verdict Verdict
	var votes []Vote
	if r.Test.GetTestType() == domain.TypeSimulation {
		verdict, votes, res.AgentResponsesJson, err = e.simulate(ctx, m, r, &usage)
	} else if mocksTools(r) {
		verdict, votes, res.AgentResponsesJson, err = e.playMocked(ctx, m, r, &usage)
	} else {
		var reply *Turn
		verdict, votes, reply, err = e.play(ctx, m, r, &usage)
		res.AgentResponsesJson = agentResponses(r, reply, m.ModelName())
	}
	agentUsage, turns := m.record()
	usage.Sub(agentUsage) // what is left is the judge's
	res.Usage.PromptTokens, res.Usage.CompletionTokens, res.Usage.TotalTokens, res.Usage.ModelCalls, res.Usage.CachedModelCalls =
		usage.PromptTokens, usage.CompletionTokens, usage.TotalTokens, usage.Calls, usage.Cached
	res.AgentUsage = &testingv1.ModelUsage{Provider: agent.Provider(), Model: agent.ModelName(),
		PromptTokens: agentUsage.PromptTokens, CompletionTokens: agentUsage.CompletionTokens, TotalTokens: agentUsage.TotalTokens,
		ModelCalls: agentUsage.Calls, CachedModelCalls: agentUsage.Cached}
	for _, t := range turns {
		res.AgentTurnMs = append(res.AgentTurnMs, t.Response.Milliseconds())
		res.AgentFirstTokenMs = append(res.AgentFirstTokenMs, t.FirstToken.Milliseconds())
	}
	res.FinishedAtUnixMs = e.Now().UnixMilli()
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		res.Status, res.ConditionResult = domain.RunFailed, domain.ConditionUnknown
		res.Error = fmt.Sprintf("The run exceeded its time limit of %s.", limit)
		res.RationaleSummary = res.Error
	case IsEndpointError(err):
		res.Status, res.ConditionResult = domain.RunFailed, domain.ConditionUnknown
		res.Error, res.RationaleSummary = err.Error(), err.Error()
	case err != nil:
		res.Status, res.ConditionResult = domain.RunFailed, domain.ConditionUnknown
		res.Error = "The model failed: " + err.Error()
		res.RationaleSummary = res.Error
	default:
		res.ConditionResult = verdict.Result
		for _, v := range votes {
			res.JudgeVotes = append(res.JudgeVotes, &testingv1.JudgeVote{Result: v.Result, Summary: v.Summary})
		}
		judged := domain.Outcome{Status: domain.RunFailed, Messages: verdict.Messages, Summary: verdict.Summary}
		if verdict.Result == domain.ConditionSuccess {
			judged.Status = domain.RunPassed
		}
		o := domain.HoldToLatencyBudget(judged, r.Definition.LatencyBudget, res.AgentTurnMs, res.AgentFirstTokenMs)
		res.Status, res.RationaleMessages, res.RationaleSummary = o.Status, o.Messages, o.Summary
		for _, b := range o.Breaches {
			res.LatencyBudgetBreaches = append(res.LatencyBudgetBreaches,
				&testingv1.LatencyBudgetBreach{Metric: b.Metric, MeasuredMs: b.MeasuredMs, BudgetMs: b.BudgetMs})
		}
	}
	return res
}

// cast picks the models of a run's roles: the judge model, and the
// agent's (Agents' choice, else the judge model), through the response
// cache when the invocation asked for it.
func (e *Executor) cast(ctx context.Context, r Run, repeatIndex int) (*roles, error) {
	cached := e.Cache != nil && r.Invocation.GetCacheModelResponses()
	withCache := func(m Model) Model {
		if c, ok := m.(Cacheable); ok && cached {
			return c.WithCache(e.Cache, repeatIndex)
		}
		return m
	}
	judge := withCache(e.Model)
	var agent AgentModel = judge
	if e.Agents != nil {
		var err error
		if agent, err = e.Agents.For(ctx, r.Invocation.GetWorkspaceId(), e.agentConfig(r.AgentConfig), e.variables(r)); err != nil {
			return nil, err
		}
		if m, ok := agent.(Model); ok {
			agent = withCache(m)
		}
	}
	return &roles{agent: agent, judge: judge}, nil
}

// variables are a run's dynamic variables: the agent's placeholders, then
// the test's values.
func (e *Executor) variables(r Run) map[string]string {
	vars := maps.Clone(e.agentConfig(r.AgentConfig).DynamicVariables) // the parsed configuration is shared
	for k, v := range r.Definition.DynamicVariables {
		vars[k] = model.ScalarString(v)
	}
	return vars
}

// conversation is the agent's configuration and the conversation a run
// starts from: the agent's first message (unless the chat history opens
// with the agent), then the test's chat history.
func (e *Executor) conversation(r Run) (Conversation, AgentConfig) {
	cfg := e.agentConfig(r.AgentConfig)
	vars := e.variables(r)
	conv := Conversation{SystemPrompt: Substitute(cfg.SystemPrompt, vars), Tools: cfg.Tools, LLM: cfg.LLM}
	history := r.Definition.ChatHistory
	if fm := Substitute(cfg.FirstMessage, vars); fm != "" && (len(history) == 0 || history[0].Role == "user") {
		conv.Turns = append(conv.Turns, Turn{Role: "agent", Text: fm})
	}
	results := historyResults(history)
	for i, m := range history {
		t := Turn{Role: m.Role, Text: deref(m.Message)}
		for j, c := range m.ToolCalls {
			id := c.RequestID
			if id == "" {
				id = fmt.Sprintf("call_%d_%d", i, j) // model APIs need an id to pair the result with
			}
			t.Calls = append(t.Calls, Call{ID: id, Name: c.ToolName, Arguments: c.ParamsAsJSON})
		}
		if t.Text == "" && len(t.Calls) == 0 {
			continue // a message that only carries results, placed after their calls
		}
		conv.Turns = append(conv.Turns, t)
		// Every call is answered at once: a model API refuses a tool call
		// that is not followed by its result.
		for j, c := range t.Calls {
			res, ok := results.take(m.ToolCalls[j].RequestID, c.Name)
			tool := Turn{Role: "tool", ToolCallID: c.ID, ToolName: c.Name, Text: "No result was recorded for this call."}
			if ok {
				tool.Text, tool.IsError = deref(res.ResultValue), res.IsError
			}
			conv.Turns = append(conv.Turns, tool)
		}
	}
	return conv, cfg
}

// recordedResults are the tool results a chat history carries, wherever
// they sit (on the calling message or a later one).
type recordedResults struct {
	byID   map[string]domain.ToolResult
	byName map[string][]domain.ToolResult // results without a request id, in order
}

func historyResults(history []domain.Message) *recordedResults {
	rr := &recordedResults{byID: map[string]domain.ToolResult{}, byName: map[string][]domain.ToolResult{}}
	for _, m := range history {
		rs, _ := m.Results() // validated when the test was written
		for _, r := range rs {
			if r.RequestID != "" {
				rr.byID[r.RequestID] = r
			} else {
				rr.byName[r.ToolName] = append(rr.byName[r.ToolName], r)
			}
		}
	}
	return rr
}

// take is the result of the call with request id id (or, for a call
// without one, the next unclaimed result of its tool).
func (rr *recordedResults) take(id, tool string) (domain.ToolResult, bool) {
	if id != "" {
		r, ok := rr.byID[id]
		return r, ok
	}
	if q := rr.byName[tool]; len(q) > 0 {
		rr.byName[tool] = q[1:]
		return q[0], true
	}
	return domain.ToolResult{}, false
}

// judgeInput is the test's success conditions and examples.
func judgeInput(def domain.TestInput) JudgeInput {
	var in JudgeInput
	if c := def.SuccessCondition; c != nil && *c != "" {
		in.Conditions = append(in.Conditions, *c)
	}
	in.Conditions = append(in.Conditions, def.SuccessConditions...)
	for _, ex := range def.SuccessExamples {
		in.SuccessExamples = append(in.SuccessExamples, deref(ex.Response))
	}
	for _, ex := range def.FailureExamples {
		in.FailureExamples = append(in.FailureExamples, deref(ex.Response))
	}
	return in
}

// play plays the agent's next turn with m and judges it; votes are the
// judge's verdicts when it was asked more than once.
func (e *Executor) play(ctx context.Context, m Model, r Run, usage *Usage) (Verdict, []Vote, *Turn, error) {
	conv, cfg := e.conversation(r)
	reply, u, err := m.Respond(ctx, conv)
	usage.Add(u)
	if err != nil {
		return Verdict{}, nil, nil, err
	}
	if r.Test.GetTestType() == domain.TypeTool {
		v, err := e.checkTools(ctx, m, r.Definition, cfg.Tools, reply, usage)
		return v, nil, &reply, err
	}
	in := judgeInput(r.Definition)
	in.Transcript, in.Reply = conv.Turns, reply
	v, votes, err := e.judge(ctx, m, in, usage)
	return v, votes, &reply, err
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// checkTools judges a tool test exactly: the referenced tool was called
// (or, with verify_absence, was not), once unless check_any_tool_matches,
// with every listed parameter matching. The referenced tool's id is the id
// of one of the agent's tools, whose name the calls carry, or that name.
func (e *Executor) checkTools(ctx context.Context, m Model, def domain.TestInput, tools []Tool, reply Turn, usage *Usage) (Verdict, error) {
	tp := def.ToolCallParameters
	want := ""
	if tp != nil && tp.ReferencedTool != nil {
		want = deref(tp.ReferencedTool.ID)
	}
	for _, t := range tools {
		if want != "" && t.ID == want {
			want = t.Name
			break
		}
	}
	var matching []Call
	for _, c := range reply.Calls {
		if want == "" || c.Name == want {
			matching = append(matching, c)
		}
	}
	fail := func(format string, a ...any) Verdict {
		msg := fmt.Sprintf(format, a...)
		return Verdict{Result: domain.ConditionFailure, Messages: []string{msg}, Summary: msg}
	}
	names := callNames(reply.Calls)
	if tp != nil && tp.VerifyAbsence {
		if len(matching) > 0 {
			return fail("Expected no call to %s; the agent called %s.", orAny(want), names), nil
		}
		return Verdict{Result: domain.ConditionSuccess, Summary: fmt.Sprintf("The agent did not call %s, as expected (calls: %s).", orAny(want), names)}, nil
	}
	if len(matching) == 0 {
		return fail("Expected a call to %s; the agent called %s.", orAny(want), names), nil
	}
	anyMatch := def.CheckAnyToolMatches != nil && *def.CheckAnyToolMatches
	if !anyMatch && len(reply.Calls) > 1 {
		return fail("Expected exactly one tool call; the agent made %d (%s).", len(reply.Calls), names), nil
	}
	var msgs []string
	for i, c := range matching {
		ok, why, err := e.checkParams(ctx, m, tp, c, usage)
		if err != nil {
			return Verdict{}, err
		}
		for _, w := range why {
			if len(matching) > 1 { // say which call each check was of
				w = fmt.Sprintf("Call %d of %d (%s): %s", i+1, len(matching), c.Name, w)
			}
			msgs = append(msgs, w)
		}
		if ok {
			return Verdict{Result: domain.ConditionSuccess, Messages: msgs,
				Summary: fmt.Sprintf("The agent called %s with matching parameters %s.", c.Name, c.Arguments)}, nil
		}
	}
	return Verdict{Result: domain.ConditionFailure, Messages: msgs,
		Summary: fmt.Sprintf("The agent called %s, but its parameters do not match.", orAny(want))}, nil
}

func (e *Executor) checkParams(ctx context.Context, m Model, tp *domain.ToolExpectation, c Call, usage *Usage) (bool, []string, error) {
	var args map[string]any
	if err := json.Unmarshal([]byte(c.Arguments), &args); err != nil {
		return false, []string{fmt.Sprintf("Call %s: arguments are not a JSON object: %s", c.Name, c.Arguments)}, nil
	}
	if tp == nil {
		return true, nil, nil
	}
	ok := true
	var msgs []string
	for _, p := range tp.Parameters {
		path := deref(p.Path)
		val, present := lookup(args, path)
		got := model.ScalarString(val)
		switch p.Eval.Type {
		case "anything":
			if !present {
				ok = false
				msgs = append(msgs, fmt.Sprintf("Parameter %s: missing.", path))
			} else {
				msgs = append(msgs, fmt.Sprintf("Parameter %s: present (any value).", path))
			}
		case "exact":
			if !present || got != deref(p.Eval.ExpectedValue) {
				ok = false
				msgs = append(msgs, fmt.Sprintf("Parameter %s: got %q, expected exactly %q.", path, got, deref(p.Eval.ExpectedValue)))
			} else {
				msgs = append(msgs, fmt.Sprintf("Parameter %s: %q matches exactly.", path, got))
			}
		case "regex":
			re, err := regexp.Compile(deref(p.Eval.Pattern))
			if err != nil || !present || !re.MatchString(got) {
				ok = false
				msgs = append(msgs, fmt.Sprintf("Parameter %s: %q does not match /%s/.", path, got, deref(p.Eval.Pattern)))
			} else {
				msgs = append(msgs, fmt.Sprintf("Parameter %s: %q matches /%s/.", path, got, deref(p.Eval.Pattern)))
			}
		case "llm":
			if !present {
				ok = false
				msgs = append(msgs, fmt.Sprintf("Parameter %s: missing.", path))
				continue
			}
			v, votes, err := e.judge(ctx, m, JudgeInput{Conditions: []string{deref(p.Eval.Description)}, Reply: Turn{Text: got}}, usage)
			if err != nil {
				return false, nil, err
			}
			if v.Result != domain.ConditionSuccess {
				ok = false
			}
			msgs = append(msgs, fmt.Sprintf("Parameter %s: %s%s", path, v.Summary, votesNote(votes)))
		}
	}
	return ok, msgs, nil
}

// lookup follows a dot-separated path into decoded JSON.
func lookup(v map[string]any, path string) (any, bool) {
	var cur any = v
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func callNames(calls []Call) string {
	if len(calls) == 0 {
		return "no tool"
	}
	n := make([]string, len(calls))
	for i, c := range calls {
		n[i] = c.Name
	}
	return strings.Join(n, ", ")
}

func orAny(name string) string {
	if name == "" {
		return "any tool"
	}
	return name
}

// The public transcript message (spec 2.4) as runs record it; the
// testing service fills in the fields left out when it shows a run.
type toolCallJSON struct {
	RequestID         string `json:"request_id"`
	ToolName          string `json:"tool_name"`
	ParamsAsJSON      string `json:"params_as_json"`
	ToolHasBeenCalled bool   `json:"tool_has_been_called"`
	Type              string `json:"type"`
}

type toolResultJSON struct {
	RequestID         string `json:"request_id"`
	ToolName          string `json:"tool_name"`
	ResultValue       string `json:"result_value"`
	IsError           bool   `json:"is_error"`
	ToolHasBeenCalled bool   `json:"tool_has_been_called"`
	Type              string `json:"type"`
}

type agentMetadataJSON struct {
	AgentID        string `json:"agent_id"`
	BranchID       string `json:"branch_id"`
	WorkflowNodeID string `json:"workflow_node_id"`
	VersionID      string `json:"version_id"`
}

type messageJSON struct {
	Role           string             `json:"role"`
	Message        string             `json:"message"`
	TimeInCallSecs int64              `json:"time_in_call_secs"`
	ToolCalls      []toolCallJSON     `json:"tool_calls"`
	ToolResults    []toolResultJSON   `json:"tool_results,omitempty"`
	AgentMetadata  *agentMetadataJSON `json:"agent_metadata,omitempty"`
	ProducingLLM   string             `json:"producing_llm,omitempty"`
	SourceMedium   string             `json:"source_medium"`
}

// historyEnd is the latest time_in_call_secs of the chat history.
func historyEnd(r Run) float64 {
	t := 0.0
	for _, m := range r.Definition.ChatHistory {
		if m.TimeInCallSecs != nil && *m.TimeInCallSecs > t {
			t = *m.TimeInCallSecs
		}
	}
	return t
}

// agentTurnMessage is an agent turn as a transcript message.
func agentTurnMessage(r Run, t Turn, at int64, model string) messageJSON {
	calls := []toolCallJSON{}
	for _, c := range t.Calls {
		calls = append(calls, toolCallJSON{RequestID: c.ID, ToolName: c.Name, ParamsAsJSON: c.Arguments, ToolHasBeenCalled: true, Type: "system"})
	}
	return messageJSON{Role: "agent", Message: t.Text, TimeInCallSecs: at, ToolCalls: calls,
		AgentMetadata: &agentMetadataJSON{AgentID: r.Invocation.GetAgentId(), BranchID: r.BranchID, WorkflowNodeID: r.Test.GetWorkflowNodeId()},
		ProducingLLM:  model, SourceMedium: "text"}
}

// agentResponses renders the reply as public transcript messages.
func agentResponses(r Run, reply *Turn, model string) []byte {
	if reply == nil {
		return []byte("[]")
	}
	return domain.TranscriptJSON([]messageJSON{agentTurnMessage(r, *reply, int64(historyEnd(r))+1, model)})
}
