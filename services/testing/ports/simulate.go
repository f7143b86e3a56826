package ports

import (
	"encoding/json"
	"slices"
	"strings"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/services/testing/app"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
	"github.com/voiceai-platform/voiceai/services/testing/runner"
)

// NewSimulator is the handlers a runner process serves (api.Serve of
// "testing-runner"): the public simulate-conversation operation, played
// by its executor as a simulation test is (the same engine,
// synchronously, within its time limit), and the judge's operations.
func NewSimulator(a *app.App, exec *runner.Executor) *Simulator {
	return &Simulator{app: a, exec: exec, judges: judgesOf(exec)}
}

// Simulator serves the runner's operations; NewSimulator makes one.
type Simulator struct {
	app    *app.App
	exec   *runner.Executor
	judges map[string]runner.Model // the models POST /v1/voiceai/judge/rejudge may name
}

// simulateInput is the public simulate-conversation body (the schema
// bounds it at the edge).
type simulateInput struct {
	Spec struct {
		User struct {
			FirstMessage *string `json:"first_message"`
			Prompt       *struct {
				Prompt *string `json:"prompt"`
			} `json:"prompt"`
		} `json:"simulated_user_config"`
		ToolMocks map[string]struct {
			Value   string `json:"default_return_value"`
			IsError bool   `json:"default_is_error"`
		} `json:"tool_mock_config"`
		History   []domain.Message `json:"partial_conversation_history"`
		Variables map[string]any   `json:"dynamic_variables"`
	} `json:"simulation_specification"`
	Criteria []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
		Goal string `json:"conversation_goal_prompt"`
	} `json:"extra_evaluation_criteria"`
	NewTurnsLimit *int `json:"new_turns_limit"`
}

func (s *Simulator) SimulateConversation(c *api.Call) (any, error) {
	var in simulateInput
	if err := c.Body(&in); err != nil {
		return nil, err
	}
	ws := c.Caller().WorkspaceID
	agent, err := s.app.Agent(c.Context(), ws, c.ID())
	if err != nil {
		return nil, err
	}
	def := domain.TestInput{ChatHistory: in.Spec.History, DynamicVariables: in.Spec.Variables, SimulationMaxTurns: in.NewTurnsLimit}
	typ := domain.TypeSimulation
	def.Type = &typ
	if p := in.Spec.User.Prompt; p != nil {
		def.SimulationScenario = p.Prompt
	}
	if def.SimulationMaxTurns == nil {
		ten := 10
		def.SimulationMaxTurns = &ten
	}
	if len(in.Spec.ToolMocks) > 0 {
		selected, fallback := domain.MockSelected, domain.FallbackRaiseError
		def.ToolMockConfig = &domain.ToolMockConfig{MockingStrategy: &selected, FallbackStrategy: &fallback}
		def.ToolMockOverrides = map[string][]domain.ToolMock{}
		for name, m := range in.Spec.ToolMocks {
			def.ToolMockConfig.MockedToolIDs = append(def.ToolMockConfig.MockedToolIDs, name)
			def.ToolMockOverrides[name] = []domain.ToolMock{{MockResult: &m.Value, IsError: m.IsError}}
		}
		slices.Sort(def.ToolMockConfig.MockedToolIDs)
	}
	var criteria []runner.Criterion
	for _, cr := range in.Criteria {
		criteria = append(criteria, runner.Criterion{ID: cr.ID, Name: cr.Name, Goal: cr.Goal})
	}
	criteria = append(criteria, agentCriteria(agent.GetPlatformSettingsJson(), criteria)...)
	opening := ""
	if fm := in.Spec.User.FirstMessage; fm != nil {
		opening = strings.TrimSpace(*fm)
	}
	run := runner.Run{
		Invocation: &testingv1.Invocation{InvocationId: "simulation", WorkspaceId: ws, AgentId: agent.GetAgentId(), RepeatCount: 1},
		Test:       &testingv1.PlannedTest{TestId: "simulation", TestName: "Simulated conversation", TestType: domain.TypeSimulation},
		Definition: def, AgentConfig: agent.GetConversationConfigJson(), RunID: "simulation",
	}
	res := s.exec.SimulateConversation(c.Context(), run, opening, criteria)
	return conversationView(res), nil
}

// agentCriteria are the agent's own evaluation criteria
// (platform_settings.evaluation.criteria of type prompt) not already
// asked for by id.
func agentCriteria(platformSettings []byte, asked []runner.Criterion) []runner.Criterion {
	var ps struct {
		Evaluation struct {
			Criteria []struct {
				ID   string `json:"id"`
				Name string `json:"name"`
				Type string `json:"type"`
				Goal string `json:"conversation_goal_prompt"`
			} `json:"criteria"`
		} `json:"evaluation"`
	}
	_ = json.Unmarshal(platformSettings, &ps)
	var out []runner.Criterion
	for _, c := range ps.Evaluation.Criteria {
		if c.ID == "" || strings.TrimSpace(c.Goal) == "" || (c.Type != "" && c.Type != "prompt") ||
			slices.ContainsFunc(asked, func(a runner.Criterion) bool { return a.ID == c.ID }) {
			continue
		}
		out = append(out, runner.Criterion{ID: c.ID, Name: c.Name, Goal: c.Goal})
	}
	return out
}

// The public simulate-conversation answer, with what this platform adds.
type simulatedConversation struct {
	Conversation json.RawMessage    `json:"simulated_conversation"`
	Analysis     conversationJudged `json:"analysis"`
	Error        string             `json:"error,omitempty"`
	AgentUsage   any                `json:"agent_model_usage"`
	JudgeUsage   any                `json:"model_usage"`
	AgentLatency any                `json:"agent_latency,omitempty"`
}

type conversationJudged struct {
	Results        map[string]runner.CriterionResult `json:"evaluation_criteria_results"`
	ResultsList    []runner.CriterionResult          `json:"evaluation_criteria_results_list"`
	DataCollection map[string]any                    `json:"data_collection_results"`
	CallSuccessful string                            `json:"call_successful"`
	Summary        string                            `json:"transcript_summary"`
	Title          string                            `json:"call_summary_title"`
}

func usageOf(m runner.ModelUse) any {
	return UsageView(&testingv1.ModelUsage{Provider: m.Provider, Model: m.Model, PromptTokens: m.PromptTokens,
		CompletionTokens: m.CompletionTokens, TotalTokens: m.TotalTokens, ModelCalls: m.Calls, CachedModelCalls: m.Cached})
}

func conversationView(res runner.ConversationResult) simulatedConversation {
	v := simulatedConversation{
		Conversation: FullMessages(res.Transcript), Error: res.Error,
		AgentUsage: usageOf(res.Agent), JudgeUsage: usageOf(res.Judge), AgentLatency: LatencyOf(res.TurnMs, res.FirstTokenMs),
		Analysis: conversationJudged{Results: map[string]runner.CriterionResult{}, ResultsList: res.Criteria,
			DataCollection: map[string]any{}, CallSuccessful: runner.CallSuccessful(res.Criteria),
			Summary: res.Summary, Title: "Simulated conversation"},
	}
	for _, c := range res.Criteria {
		v.Analysis.Results[c.ID] = c
	}
	if res.Error != "" {
		v.Analysis.CallSuccessful, v.Analysis.Summary = "unknown", "The conversation stopped early: "+res.Error
	}
	return v
}
