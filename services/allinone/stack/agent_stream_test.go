package stack

import (
	"encoding/json"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/llm/llmtest"
	"github.com/voiceai-platform/voiceai/pkg/wire"
)

// streamAgent is an agent played by an endpoint of the given api_type,
// with no other settings.
func (s *endpointStack) streamAgent(t *testing.T, url, apiType string) string {
	t.Helper()
	return s.customAgent(t, map[string]any{}, map[string]any{"url": url, "api_type": apiType})
}

type streamedRun struct {
	Status         string             `json:"status"`
	Error          string             `json:"error"`
	AgentResponses []map[string]any   `json:"agent_responses"`
	AgentLatency   *wire.AgentLatency `json:"agent_latency"`
}

func (s *endpointStack) streamedRuns(t *testing.T, agent string, repeat int, tests ...string) ([]streamedRun, wire.AgentLatency) {
	t.Helper()
	id := runAndWait(t, s.Stack, agent, repeat, tests...)
	var inv struct {
		TestRuns     []streamedRun     `json:"test_runs"`
		AgentLatency wire.AgentLatency `json:"agent_latency"`
	}
	if err := json.Unmarshal(s.call(t, "GET", "/v1/convai/test-invocations/"+id, "", 200), &inv); err != nil {
		t.Fatal(err)
	}
	return inv.TestRuns, inv.AgentLatency
}

const teamAnswer = "Team endpoint says: we open nine to five, Monday to Friday."

// An endpoint shaped like the ElevenLabs guide's example server (every
// answer streamed as server-sent events, whatever "stream" says), on the
// Chat Completions and on the Responses API, plays the agent in an llm
// test, a simulation test and simulate-conversation: it was asked to
// stream, and the whole streamed answer is what the judge judged and what
// the transcript holds.
func TestStreamingEndpointPlaysTheAgent(t *testing.T) {
	t.Parallel()
	for _, api := range []string{"chat_completions", "responses"} {
		t.Run(api, func(t *testing.T) {
			var userTurns atomic.Int32
			s := startWithEndpoints(t, llmtest.AgentAndJudge(
				func(llmtest.Request) llmtest.Reply {
					if userTurns.Add(1)%2 == 1 {
						return llmtest.OK("When do you open?")
					}
					return llmtest.OK("Thanks! [END_CONVERSATION]")
				},
				llmtest.Fixed(0, `{"result":"success","rationale":["it gives the hours"],"summary":"judged by the judge model"}`)), nil)
			team := llmtest.NewServer(llmtest.Fixed(0, teamAnswer))
			t.Cleanup(team.Close)
			team.SetStream(&llmtest.Stream{Responses: api == "responses", Gap: time.Millisecond})
			agent := s.streamAgent(t, team.URL, api)

			hours := createTest(t, s.Stack, hoursTest)
			runs, latency := s.streamedRuns(t, agent, 1, hours)
			run := runs[0]
			if run.Status != "passed" || len(run.AgentResponses) != 1 || run.AgentResponses[0]["message"] != teamAnswer {
				t.Fatalf("llm test run: %+v", run)
			}
			if l := run.AgentLatency; l == nil || len(l.TurnMs) != 1 || len(l.FirstTokenMs) != 1 || l.FirstTokenMs[0] > l.TurnMs[0] ||
				latency.Turns != 1 || latency.FirstTokenP50Ms == nil || latency.FirstTokenMaxMs == nil {
				t.Fatalf("latency: run %+v, invocation %+v", run.AgentLatency, latency)
			}
			reqs := team.Requests()
			wantPath := llmtest.ChatPath
			if api == "responses" {
				wantPath = llmtest.ResponsesPath
			}
			if len(reqs) != 1 || !reqs[0].Stream || reqs[0].Path != wantPath || reqs[0].BearerToken() != teamKey || reqs[0].Model != "team-ft" {
				t.Fatalf("the endpoint got %d requests: %s %s", len(reqs), reqs[0].Path, reqs[0].Body)
			}
			judged := 0
			for _, j := range s.judge.Requests() {
				if llmtest.IsJudge(j) {
					judged++
					if !strings.Contains(string(j.Body), teamAnswer) {
						t.Fatalf("the judge did not judge the whole answer: %s", j.Body)
					}
				}
			}
			if judged == 0 {
				t.Fatal("nothing was judged")
			}

			sim := createTest(t, s.Stack, `{"type":"simulation","name":"Hours, simulated",
			  "simulation_scenario":"You want to know when the shop opens.","simulation_max_turns":5,
			  "success_conditions":["gives the opening hours"]}`)
			before := team.Len()
			runs, _ = s.streamedRuns(t, agent, 1, sim)
			if runs[0].Status != "passed" || team.Len()-before != 1 {
				t.Fatalf("simulation: %d endpoint calls, run %+v", team.Len()-before, runs[0])
			}
			found := false
			for _, m := range runs[0].AgentResponses {
				found = found || m["message"] == teamAnswer
			}
			if !found {
				t.Fatalf("the simulation's transcript: %+v", runs[0].AgentResponses)
			}

			var simulated struct {
				Conversation []map[string]any `json:"simulated_conversation"`
				Analysis     struct {
					CallSuccessful string `json:"call_successful"`
				} `json:"analysis"`
				AgentLatency *wire.AgentLatency `json:"agent_latency"`
			}
			body := s.simulateHours(t, agent, &simulated)
			conv := simulated.Conversation
			if len(conv) < 3 || conv[2]["message"] != teamAnswer || simulated.Analysis.CallSuccessful != "success" ||
				simulated.AgentLatency == nil || len(simulated.AgentLatency.FirstTokenMs) == 0 {
				t.Fatalf("simulate-conversation: %s", body)
			}
			for _, r := range team.Requests() {
				if !r.Stream {
					t.Fatalf("a request did not ask to stream: %s", r.Body)
				}
			}
		})
	}
}

// A fake that holds its first chunk 400 ms and then sends a chunk every
// 400 ms: the run reports time to first token as the first chunk's time,
// not the second's, and the whole turn as the last chunk's, not the one
// before. Neither can be read before its chunk was sent, so each is
// bounded below exactly. Above, a loaded machine reads late (tens of ms
// under -race; once 104 ms on the last chunk, once 230 ms on the last
// with 200 ms gaps, which failed this test): the first token must be
// read before the second chunk is sent, a whole gap later, and the whole
// turn within a second after the last chunk (a chunk before it, read
// less than a gap late, falls under the bound below).
func TestStreamingEndpointTimeToFirstToken(t *testing.T) {
	t.Parallel()
	s := startWithEndpoints(t, llmtest.Fixed(0, `{"result":"success","rationale":["ok"],"summary":"ok"}`), nil)
	team := llmtest.NewServer(llmtest.Fixed(0, "We open at nine sharp."))
	t.Cleanup(team.Close)
	const first, gap = 400 * time.Millisecond, 400 * time.Millisecond
	team.SetStream(&llmtest.Stream{First: first, Gap: gap, NoRoleChunk: true})
	agent := s.streamAgent(t, team.URL, "chat_completions")
	runs, latency := s.streamedRuns(t, agent, 1, createTest(t, s.Stack, hoursTest))
	l := runs[0].AgentLatency
	if runs[0].Status != "passed" || l == nil || len(l.FirstTokenMs) != 1 || len(l.TurnMs) != 1 {
		t.Fatalf("run %+v", runs[0])
	}
	// 5 words, then the finish, usage and [DONE] chunks: 8 chunks, the
	// last 7 gaps after the first.
	within := func(ms int64, at time.Duration) bool {
		d := time.Duration(ms)*time.Millisecond - at
		return d >= -10*time.Millisecond && d < gap
	}
	if !within(l.FirstTokenMs[0], first) {
		t.Fatalf("time to first token %d ms, want from %d to before the second chunk's %d", l.FirstTokenMs[0], first.Milliseconds(), (first + gap).Milliseconds())
	}
	if last := first + 7*gap; !(time.Duration(l.TurnMs[0])*time.Millisecond >= last-10*time.Millisecond &&
		time.Duration(l.TurnMs[0])*time.Millisecond < last+time.Second) {
		t.Fatalf("whole turn %d ms: want the last chunk's, from %d ms (the one before it is sent at %d ms)",
			l.TurnMs[0], last.Milliseconds(), (first + 6*gap).Milliseconds())
	}
	if latency.FirstTokenP50Ms == nil || *latency.FirstTokenP50Ms != l.FirstTokenMs[0] || *latency.FirstTokenP95Ms != l.FirstTokenMs[0] {
		t.Fatalf("invocation latency %+v", latency)
	}
}

// Each bad stream fails its run at once, within the run's time limit,
// naming the fault, never retried once it began, the key redacted; after
// them no stream reader, fake handler or request is left.
func TestBadStreamsFailTheRun(t *testing.T) {
	// Not in parallel with the other tests: it reads every goroutine's stack, the other tests' streams included.
	s := startWithEndpoints(t, llmtest.Fixed(0, `{"result":"success","rationale":["ok"],"summary":"ok"}`), func(c *Config) {
		c.Runner.EndpointIdleTimeout = 300 * time.Millisecond
		c.Runner.EndpointMaxAnswerBytes = 64 << 10
		c.Runner.RunTimeout = 20 * time.Second
	})
	hours := createTest(t, s.Stack, hoursTest)
	var servers []*llmtest.Server
	for _, tc := range []struct {
		name   string
		stream llmtest.Stream
		want   string
	}{
		{"no done", llmtest.Stream{NoEnd: true}, "agent endpoint stream: no [DONE] before the connection closed (after 14 chunks)"},
		{"no response.completed", llmtest.Stream{NoEnd: true, Responses: true}, "agent endpoint stream: no response.completed before the connection closed"},
		{"stall", llmtest.Stream{StallAfter: 3}, "agent endpoint stream: stalled 300ms after 3 chunks"},
		{"too large", llmtest.Stream{Endless: true}, "agent endpoint stream: exceeded 64 KiB"},
		{"malformed", llmtest.Stream{MalformedAt: 4}, "agent endpoint stream: malformed data line 7: not JSON"},
		{"error event", llmtest.Stream{ErrorAfter: 2, ErrorMessage: "overloaded for " + teamKey}, "agent endpoint stream: error event: overloaded for [redacted secret]"},
		{"responses error event", llmtest.Stream{ErrorAfter: 2, ErrorMessage: "rate limited", Responses: true}, "agent endpoint stream: error event: rate limited"},
		{"cut", llmtest.Stream{CutAfter: 5}, "agent endpoint stream: connection cut after 5 chunks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			team := llmtest.NewServer(llmtest.Fixed(0, teamAnswer))
			t.Cleanup(team.Close)
			servers = append(servers, team)
			st := tc.stream
			team.SetStream(&st)
			api := "chat_completions"
			if st.Responses {
				api = "responses"
			}
			agent := s.streamAgent(t, team.URL, api)
			started := time.Now()
			runs, _ := s.streamedRuns(t, agent, 1, hours)
			if took := time.Since(started); took > 15*time.Second {
				t.Fatalf("the run took %s", took)
			}
			if r := runs[0]; r.Status != "failed" || !strings.HasPrefix(r.Error, tc.want) || strings.Contains(r.Error, teamKey) {
				t.Fatalf("run %s %q, want an error starting %q", r.Status, r.Error, tc.want)
			}
			if n := team.Len(); n != 1 {
				t.Fatalf("%d requests: a stream that began was retried", n)
			}
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		busy := 0
		for _, srv := range servers {
			busy += srv.Busy()
		}
		buf := make([]byte, 4<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		left := strings.Contains(stacks, "pkg/llm.(*Client)") || strings.Contains(stacks, "llmtest.writeStream") || strings.Contains(stacks, "llmtest.(*Server).serve")
		if busy == 0 && !left {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("left behind: %d connections with a request in flight; stacks:\n%s", busy, stacks)
		}
		time.Sleep(20 * time.Millisecond) // polling, with a deadline
	}
}

// An agent's endpoint on a websocket is refused at create, naming what is
// supported.
func TestWebsocketEndpointIsRefused(t *testing.T) {
	t.Parallel()
	s := startWithEndpoints(t, llmtest.Fixed(0, "{}"), nil)
	body := s.call(t, "POST", "/v1/convai/agents/create", `{"name":"Socket bot","conversation_config":{"agent":{"prompt":{
		"prompt":"p","llm":"custom-llm","custom_llm":{"url":"https://llm.example.com/v1","api_type":"websocket"}}}}}`, 422)
	if !strings.Contains(string(body), `"api_type"`) || !strings.Contains(string(body), "'chat_completions' or 'responses'") {
		t.Fatalf("%s", body)
	}
}

// With VOICEAI_LLM_STREAM the platform's own models stream too: an SSE-only
// server plays the agent (its first token recorded), the simulated user
// and the judge.
func TestPlatformModelsStream(t *testing.T) {
	t.Parallel()
	s := startWithEndpoints(t, llmtest.AgentAndJudge(llmtest.Fixed(0, "We open nine to five."),
		llmtest.Fixed(0, `{"result":"success","rationale":["it gives the hours"],"summary":"streamed verdict"}`)),
		func(c *Config) { c.Runner.LLMStream = true })
	// Chunks 100 ms apart: the first token comes before the turn ends even
	// on a loaded machine, where 5 ms gaps could all arrive in one read.
	s.judge.SetStream(&llmtest.Stream{First: 50 * time.Millisecond, Gap: 100 * time.Millisecond})
	agent := newAgent(t, s.Stack, adminKey, "Platform bot")
	runs, _ := s.streamedRuns(t, agent, 1, createTest(t, s.Stack, hoursTest))
	r := runs[0]
	if r.Status != "passed" || r.AgentLatency == nil || len(r.AgentLatency.FirstTokenMs) != 1 || r.AgentLatency.FirstTokenMs[0] < 50 ||
		r.AgentLatency.FirstTokenMs[0] >= r.AgentLatency.TurnMs[0] || r.AgentResponses[0]["message"] != "We open nine to five." {
		t.Fatalf("run %+v", r)
	}
	for _, req := range s.judge.Requests() {
		if !req.Stream {
			t.Fatalf("a platform model request did not stream: %s", req.Body)
		}
	}
}
