package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/llm/llmtest"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

const teamKey = "sk-team-endpoint-key-7c41"

// endpointRun is what these tests read of a run.
type endpointRun struct {
	Status          string           `json:"status"`
	Error           string           `json:"error"`
	AgentResponses  []map[string]any `json:"agent_responses"`
	ModelUsage      modelUsage       `json:"model_usage"`
	AgentModelUsage modelUsage       `json:"agent_model_usage"`
	AgentLatency    *struct {
		TurnMs []int64 `json:"turn_ms"`
		Turns  int     `json:"turns"`
	} `json:"agent_latency"`
	ConditionResult struct {
		Result string `json:"result"`
	} `json:"condition_result"`
}

type endpointStack struct {
	*Stack
	judge *llmtest.Server
	logs  *testkit.LogBuffer
	seen  []string // every API answer's body
}

// startWithEndpoints starts a stack whose platform judge is its own model
// (judge-model on the judge server) and whose agents may call loopback
// endpoints.
func startWithEndpoints(t *testing.T, judge llmtest.Handler, tweak func(*Config)) *endpointStack {
	t.Helper()
	js := llmtest.NewServer(judge)
	t.Cleanup(js.Close)
	s, logs := startLogging(t, slog.LevelDebug, localHooks, func(c *Config) {
		c.Runner.Provider, c.Runner.BaseURL, c.Runner.LLMModel, c.Runner.JudgeModel = "openai", js.URL, "platform-model", "judge-model"
		if tweak != nil {
			tweak(c)
		}
	})
	return &endpointStack{Stack: s, judge: js, logs: logs}
}

func (s *endpointStack) call(t *testing.T, method, path, body string, want int) []byte {
	t.Helper()
	r := call(t, s.Stack, method, path, adminKey, body)
	s.seen = append(s.seen, string(r.Body))
	if r.Code != want {
		t.Fatalf("%s %s: %d %s", method, path, r.Code, r.Body)
	}
	return r.Body
}

// teamAgent stores the key as a workspace secret and creates an agent
// whose turns its own endpoint plays.
func (s *endpointStack) teamAgent(t *testing.T, url string) string {
	t.Helper()
	return s.customAgent(t, map[string]any{"temperature": 0.4, "max_tokens": 200},
		map[string]any{"url": url, "request_headers": map[string]string{"X-Team": "qa"}})
}

// customAgent stores the key as a workspace secret and creates the agent
// "Team bot" whose turns the endpoint customLLM says (its url, ...) plays,
// model team-ft with the secret as its key; prompt adds settings to its
// prompt.
func (s *endpointStack) customAgent(t *testing.T, prompt, customLLM map[string]any) string {
	t.Helper()
	var secret struct {
		SecretID string `json:"secret_id"`
	}
	_ = json.Unmarshal(s.call(t, "POST", "/v1/convai/secrets", `{"name":"team key","value":"`+teamKey+`"}`, 200), &secret)
	customLLM["model_id"] = "team-ft"
	customLLM["api_key"] = map[string]string{"secret_id": secret.SecretID}
	prompt["prompt"] = "You are Team Bot. We open nine to five."
	prompt["llm"] = "custom-llm"
	prompt["custom_llm"] = customLLM
	body, err := json.Marshal(map[string]any{"name": "Team bot", "conversation_config": map[string]any{
		"agent": map[string]any{"first_message": "Hello, Team Bot here.", "prompt": prompt}}})
	if err != nil {
		t.Fatal(err)
	}
	var agent struct {
		AgentID string `json:"agent_id"`
	}
	_ = json.Unmarshal(s.call(t, "POST", "/v1/convai/agents/create", string(body), 201), &agent)
	return agent.AgentID
}

// simulateHours has agent simulate a conversation with a caller asking
// its opening hours (criterion "hours": it gives them), and reads the
// answer into out; it returns the answer as sent.
func (s *endpointStack) simulateHours(t *testing.T, agent string, out any) []byte {
	t.Helper()
	body := s.call(t, "POST", "/v1/convai/agents/"+agent+"/simulate-conversation", `{"simulation_specification":{
	    "simulated_user_config":{"first_message":"Hi, when are you open?","prompt":{"prompt":"You want the opening hours."}}},
	  "extra_evaluation_criteria":[{"id":"hours","name":"Hours","type":"prompt","conversation_goal_prompt":"The agent gives the opening hours"}],
	  "new_turns_limit":3}`, 200)
	if err := json.Unmarshal(body, out); err != nil {
		t.Fatal(err)
	}
	return body
}

func (s *endpointStack) runs(t *testing.T, agent string, repeat int, tests ...string) ([]endpointRun, map[string]any) {
	t.Helper()
	id := runAndWait(t, s.Stack, agent, repeat, tests...)
	body := s.call(t, "GET", "/v1/convai/test-invocations/"+id, "", 200)
	var inv struct {
		TestRuns     []endpointRun  `json:"test_runs"`
		AgentLatency map[string]any `json:"agent_latency"`
	}
	if err := json.Unmarshal(body, &inv); err != nil {
		t.Fatal(err)
	}
	return inv.TestRuns, inv.AgentLatency
}

// A team's own endpoint plays its agent: it receives the agent's system
// prompt, the history, its settings and the secret as a bearer key; its
// answer is what the judge (another model) judges, in an llm test and
// across a multi-turn simulation. The secret appears in no answer, log
// line or event.
func TestAgentsOwnEndpointPlaysTheAgent(t *testing.T) {
	t.Parallel()
	var userTurns atomic.Int32
	s := startWithEndpoints(t, llmtest.AgentAndJudge(
		func(llmtest.Request) llmtest.Reply { // the simulated user: two turns, then done
			if userTurns.Add(1)%2 == 1 {
				return llmtest.OK("When do you open?")
			}
			return llmtest.OK("Thanks! [END_CONVERSATION]")
		},
		llmtest.Fixed(0, `{"result":"success","rationale":["it gives the hours"],"summary":"judged by the judge model"}`)), nil)
	team := llmtest.NewServer(llmtest.Fixed(0, "Team endpoint says: we open nine to five."))
	t.Cleanup(team.Close)
	agent := s.teamAgent(t, team.URL)

	hours := createTest(t, s.Stack, hoursTest)
	runs, latency := s.runs(t, agent, 1, hours)
	run := runs[0]
	if run.Status != "passed" || len(run.AgentResponses) != 1 || run.AgentResponses[0]["message"] != "Team endpoint says: we open nine to five." {
		t.Fatalf("llm test run: %+v", run)
	}
	if run.AgentModelUsage.Provider != "custom-llm" || run.AgentModelUsage.Model != "team-ft" || run.AgentModelUsage.ModelCalls != 1 ||
		run.ModelUsage.Model != "judge-model" || run.ModelUsage.ModelCalls != 1 {
		t.Fatalf("who played and who judged: agent %+v, judge %+v", run.AgentModelUsage, run.ModelUsage)
	}
	if run.AgentLatency == nil || run.AgentLatency.Turns != 1 || len(run.AgentLatency.TurnMs) != 1 || latency["turns"] != 1.0 || latency["p50_ms"] == nil {
		t.Fatalf("latency: run %+v, invocation %v", run.AgentLatency, latency)
	}
	reqs := team.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests to the team's endpoint", len(reqs))
	}
	r := reqs[0]
	msgs := r.Messages
	if r.BearerToken() != teamKey || r.Header.Get("X-Team") != "qa" || r.Model != "team-ft" || r.Temperature == nil || *r.Temperature != 0.4 ||
		r.MaxTokens == nil || *r.MaxTokens != 200 || len(msgs) != 3 || msgs[0].Role != "system" || !strings.HasPrefix(msgs[0].Content, "You are Team Bot.") ||
		msgs[1].Content != "Hello, Team Bot here." || msgs[2].Content != "What are your opening hours?" {
		t.Fatalf("the endpoint got %s (bearer %q)", r.Body, r.BearerToken())
	}
	for _, j := range s.judge.Requests() {
		if llmtest.IsJudge(j) {
			if j.Model != "judge-model" || !strings.Contains(string(j.Body), "Team endpoint says") {
				t.Fatalf("the judge got %s", j.Body)
			}
		} else {
			t.Fatalf("the platform's model played the agent: %s", j.Body)
		}
	}

	// A simulation: the judge model plays the user, the endpoint the agent.
	sim := createTest(t, s.Stack, `{"type":"simulation","name":"Hours, simulated",
	  "simulation_scenario":"You want to know when the shop opens.","simulation_max_turns":5,
	  "success_conditions":["gives the opening hours"]}`)
	before := team.Len()
	runs, _ = s.runs(t, agent, 1, sim)
	if runs[0].Status != "passed" || team.Len()-before != 1 || runs[0].AgentModelUsage.ModelCalls != 1 {
		t.Fatalf("simulation: %d endpoint calls, run %+v", team.Len()-before, runs[0])
	}
	last := team.Requests()[team.Len()-1]
	if n := len(last.Messages); n < 3 || last.Messages[n-1].Content != "When do you open?" {
		t.Fatalf("the simulated conversation the endpoint saw: %s", last.Body)
	}

	// simulate-conversation: the same engine, now, one verdict per criterion.
	before = team.Len()
	var simulated struct {
		Conversation []map[string]any `json:"simulated_conversation"`
		Analysis     struct {
			Results        map[string]map[string]any `json:"evaluation_criteria_results"`
			CallSuccessful string                    `json:"call_successful"`
		} `json:"analysis"`
		AgentUsage modelUsage `json:"agent_model_usage"`
		JudgeUsage modelUsage `json:"model_usage"`
	}
	body := s.simulateHours(t, agent, &simulated)
	conv := simulated.Conversation
	if len(conv) < 3 || conv[0]["message"] != "Hello, Team Bot here." || conv[1]["role"] != "user" || conv[1]["message"] != "Hi, when are you open?" ||
		conv[2]["message"] != "Team endpoint says: we open nine to five." || simulated.Analysis.CallSuccessful != "success" ||
		simulated.Analysis.Results["hours"]["result"] != "success" || simulated.AgentUsage.Provider != "custom-llm" ||
		simulated.JudgeUsage.Model != "judge-model" || team.Len() == before {
		t.Fatalf("simulate-conversation: %s", body)
	}

	// Nowhere in clear: answers, logs, any stream's events.
	for _, a := range s.seen {
		if strings.Contains(a, teamKey) {
			t.Fatalf("an answer holds the key: %.300s", a)
		}
	}
	if strings.Contains(s.logs.String(), teamKey) {
		t.Fatal("a log line holds the key")
	}
	jsctx := testenv.JetStreamAt(t, s.NATSURL)
	streams := jsctx.ListStreams(context.Background())
	scanned := 0
	for info := range streams.Info() {
		st, _ := jsctx.Stream(context.Background(), info.Config.Name)
		for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
			m, err := st.GetMsg(context.Background(), seq)
			if err != nil {
				continue // deleted (a work queue's acknowledged job)
			}
			scanned++
			if strings.Contains(string(m.Data), teamKey) || strings.Contains(fmt.Sprint(m.Header), teamKey) {
				t.Fatalf("stream %s message %d (%s) holds the key", info.Config.Name, seq, m.Subject)
			}
		}
	}
	if scanned == 0 {
		t.Fatal("no event scanned")
	}
}

// An endpoint that is down fails its runs quickly, each with the reason,
// and the invocation completes; a slow one never has more requests in
// flight than its limit.
func TestAgentsOwnEndpointDownOrSlow(t *testing.T) {
	t.Parallel()
	s := startWithEndpoints(t, llmtest.Fixed(0, `{"result":"success","rationale":["ok"],"summary":"ok"}`), func(c *Config) {
		c.Runner.EndpointConcurrency = 2
	})
	down := "http://" + testkit.FreeAddr(t) + "/v1"
	hours := createTest(t, s.Stack, hoursTest)

	started := time.Now()
	runs, _ := s.runs(t, s.teamAgent(t, down), 20, hours)
	if took := time.Since(started); took > 15*time.Second {
		t.Fatalf("20 runs against a closed port took %s", took)
	}
	for i, r := range runs {
		if r.Status != "failed" || !strings.HasPrefix(r.Error, "agent endpoint unreachable: ") {
			t.Fatalf("run %d: %s %q", i, r.Status, r.Error)
		}
	}

	var inFlight, most atomic.Int32
	slow := llmtest.NewServer(func(req llmtest.Request) llmtest.Reply {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		select { // a slow model
		case <-time.After(150 * time.Millisecond):
		case <-req.Context.Done():
		}
		return llmtest.OK("We open nine to five.")
	})
	t.Cleanup(slow.Close)
	runs, _ = s.runs(t, s.teamAgent(t, slow.URL), 12, hours)
	for i, r := range runs {
		if r.Status != "passed" {
			t.Fatalf("slow run %d: %s %q", i, r.Status, r.Error)
		}
		if r.AgentLatency == nil || r.AgentLatency.TurnMs[0] < 150 {
			t.Fatalf("slow run %d's latency: %+v", i, r.AgentLatency)
		}
	}
	if got := most.Load(); got > 2 || got < 1 {
		t.Fatalf("%d requests in flight at most, limit 2", got)
	}
}
