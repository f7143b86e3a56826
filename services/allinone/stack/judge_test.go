package stack

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/llm/llmtest"
)

// startWithModel starts a stack whose runner plays and judges through an
// OpenAI-compatible test server answering with h.
func startWithModel(t *testing.T, h llmtest.Handler) (*Stack, *llmtest.Server) {
	t.Helper()
	srv := llmtest.NewServer(h)
	t.Cleanup(srv.Close) // after the stack's Close: cleanups run last first
	s := startAdmin(t, func(c *Config) {
		c.Runner.Provider, c.Runner.BaseURL, c.Runner.LLMModel = "openai", srv.URL, "test-model"
	})
	return s, srv
}

// judgedRun is what these tests read of a run.
type judgedRun struct {
	TestRunID       string           `json:"test_run_id"`
	Status          string           `json:"status"`
	AgentResponses  []map[string]any `json:"agent_responses"`
	ConditionResult struct {
		Result string `json:"result"`
	} `json:"condition_result"`
	JudgeVotes []struct {
		Result  string `json:"result"`
		Summary string `json:"summary"`
	} `json:"judge_votes"`
	JudgeAgreement *float64   `json:"judge_agreement"`
	ModelUsage     modelUsage `json:"model_usage"`       // the judge's
	AgentUsage     modelUsage `json:"agent_model_usage"` // the agent's
}

type modelUsage struct {
	Provider         string `json:"provider"`
	Model            string `json:"model"`
	ModelCalls       int    `json:"model_calls"`
	CachedModelCalls int    `json:"cached_model_calls"`
}

func judgedRuns(t *testing.T, s *Stack, id string) (map[string]any, []judgedRun) {
	t.Helper()
	r := call(t, s, "GET", "/v1/convai/test-invocations/"+id, adminKey, "")
	var head map[string]any
	var runs struct {
		TestRuns []judgedRun `json:"test_runs"`
	}
	if r.Code != 200 || json.Unmarshal(r.Body, &head) != nil || json.Unmarshal(r.Body, &runs) != nil {
		t.Fatalf("get invocation: %d %s", r.Code, r.Body)
	}
	return head, runs.TestRuns
}

// A judge that changes its mind: a failure is judged again and the
// majority decides; the run shows every vote and the agreement.
func TestFlakyJudgeThroughTheGateway(t *testing.T) {
	t.Parallel()
	fail, pass := llmtest.Verdict("failure", "The hours are missing."), llmtest.Verdict("success", "The hours are given.")
	unsure := llmtest.Verdict("unknown", "The reply is cut off.")
	s, srv := startWithModel(t, llmtest.AgentAndJudge(llmtest.Fixed(0, "We are open nine to five every weekday."),
		// The first run's verdicts, then the second's (which stop at a
		// majority), the third's (one success), the fourth's (no majority).
		llmtest.Sequence(fail, pass, pass, fail, fail, pass, fail, unsure, pass)))
	agent := agentWith(t, s)
	hours := createTest(t, s, hoursTest)

	_, runs := judgedRuns(t, s, runAndWait(t, s, agent, 1, hours))
	run := runs[0]
	if run.Status != "passed" || run.ConditionResult.Result != "success" || len(run.JudgeVotes) != 3 ||
		run.JudgeVotes[0].Result != "failure" || run.JudgeVotes[0].Summary != "The hours are missing." ||
		run.JudgeVotes[1].Result != "success" || run.JudgeVotes[2].Result != "success" ||
		run.JudgeAgreement == nil || *run.JudgeAgreement != 0.67 || run.ModelUsage.ModelCalls != 3 || run.AgentUsage.ModelCalls != 1 {
		t.Fatalf("outvoted failure: %+v", run)
	}

	_, runs = judgedRuns(t, s, runAndWait(t, s, agent, 1, hours))
	run = runs[0]
	if run.Status != "failed" || run.ConditionResult.Result != "failure" || len(run.JudgeVotes) != 2 ||
		run.JudgeAgreement == nil || *run.JudgeAgreement != 1 {
		t.Fatalf("confirmed failure: %+v", run)
	}
	if srv.Len() != 2+5 {
		t.Fatalf("%d model calls, want 2 agent turns and 5 verdicts", srv.Len())
	}

	// A success stands alone: no votes on the run.
	r := call(t, s, "GET", "/v1/convai/test-invocations/"+runAndWait(t, s, agent, 1, hours), adminKey, "")
	if strings.Contains(string(r.Body), "judge_votes") || strings.Contains(string(r.Body), "judge_agreement") {
		t.Fatalf("one vote shows votes: %s", r.Body)
	}

	// A well-formed "unknown" is the model's answer: its vote says so,
	// with the model's reason; without a majority the run is unknown.
	_, runs = judgedRuns(t, s, runAndWait(t, s, agent, 1, hours))
	run = runs[0]
	if run.Status != "failed" || run.ConditionResult.Result != "unknown" || len(run.JudgeVotes) != 3 ||
		run.JudgeVotes[1].Result != "unknown" || run.JudgeVotes[1].Summary != "The judge model answered unknown: The reply is cut off." {
		t.Fatalf("a vote of unknown: %+v", run)
	}
}

// With cache_model_responses, running the same tests again (and
// resubmitting) answers every model request from the cache; without it,
// every request goes to the model.
func TestModelResponseCacheThroughTheGateway(t *testing.T) {
	t.Parallel()
	s, srv := startWithModel(t, llmtest.AgentAndJudge(llmtest.Fixed(0, "We are open nine to five every weekday."),
		llmtest.Fixed(0, `{"result":"success","rationale":["ok"],"summary":"ok"}`)))
	agent := agentWith(t, s)
	hours := createTest(t, s, hoursTest)
	run := func(cache string) string {
		t.Helper()
		id := startInvocation(t, s, adminKey, agent, fmt.Sprintf(`{"tests":[{"test_id":%q}],"repeat_count":2%s}`, hours, cache))
		awaitCompleted(t, s, id, 30*time.Second)
		return id
	}
	responses := func(runs []judgedRun) string {
		b, _ := json.Marshal([]any{runs[0].AgentResponses, runs[1].AgentResponses})
		return string(b)
	}

	first := run(`,"cache_model_responses":true`)
	head, firstRuns := judgedRuns(t, s, first)
	calls := srv.Len()
	if head["cache_model_responses"] != true || calls != 4 {
		t.Fatalf("first: %d calls, head %v", calls, head)
	}
	second := run(`,"cache_model_responses":true`)
	_, secondRuns := judgedRuns(t, s, second)
	if srv.Len() != calls {
		t.Fatalf("the cached rerun made %d model calls", srv.Len()-calls)
	}
	if u, a := secondRuns[0].ModelUsage, secondRuns[0].AgentUsage; responses(secondRuns) != responses(firstRuns) ||
		u.ModelCalls+a.ModelCalls != 0 || u.CachedModelCalls != 1 || a.CachedModelCalls != 1 {
		t.Fatalf("cached rerun:\n%s\n%s\n%+v %+v", responses(secondRuns), responses(firstRuns), u, a)
	}

	// A resubmission keeps the invocation's choice.
	r := call(t, s, "POST", "/v1/convai/test-invocations/"+second+"/resubmit", adminKey,
		fmt.Sprintf(`{"test_run_ids":[%q],"agent_id":%q}`, secondRuns[0].TestRunID, agent))
	if r.Code != 200 {
		t.Fatalf("resubmit: %d %s", r.Code, r.Body)
	}
	awaitCompleted(t, s, second, 30*time.Second)
	if srv.Len() != calls {
		t.Fatalf("the cached resubmission made %d model calls", srv.Len()-calls)
	}

	// Another prompt is another request.
	if r := call(t, s, "PATCH", "/v1/convai/agents/"+agent, adminKey,
		`{"conversation_config":{"agent":{"prompt":{"prompt":"You help guests book tables. We open at ten."}}}}`); r.Code != 200 {
		t.Fatalf("prompt change: %d %s", r.Code, r.Body)
	}
	run(`,"cache_model_responses":true`)
	if srv.Len() == calls {
		t.Fatal("a changed prompt was answered from the cache")
	}

	// Without the flag, nothing is cached: both runs call the model, twice.
	calls = srv.Len()
	id := run("")
	head, _ = judgedRuns(t, s, id)
	run("")
	if _, shown := head["cache_model_responses"]; shown || srv.Len()-calls != 8 {
		t.Fatalf("uncached: %d calls, head %v", srv.Len()-calls, head)
	}
}

// While runs are outstanding, each test's runs share one bucket, status
// pending; once they finish, the buckets are the real ones. A
// resubmission makes its tests' buckets pending again, and only theirs.
func TestBucketsPendingThroughTheGateway(t *testing.T) {
	t.Parallel()
	var gate atomic.Pointer[chan struct{}] // the agent answers once it is closed
	hold := func() chan struct{} { ch := make(chan struct{}); gate.Store(&ch); return ch }
	release := hold()
	s, srv := startWithModel(t, llmtest.AgentAndJudge(
		func(req llmtest.Request) llmtest.Reply {
			select {
			case <-*gate.Load():
			case <-req.Context.Done():
			}
			return llmtest.OK("We are open nine to five every weekday.")
		},
		llmtest.Fixed(0, `{"result":"success","rationale":["ok"],"summary":"ok"}`)))
	agent := agentWith(t, s)
	hours := createTest(t, s, hoursTest)
	again := createTest(t, s, strings.Replace(hoursTest, "Opening hours", "Opening hours again", 1))
	r := call(t, s, "POST", "/v1/convai/agents/"+agent+"/run-tests", adminKey,
		fmt.Sprintf(`{"tests":[{"test_id":%q},{"test_id":%q}],"repeat_count":2}`, hours, again))
	if r.Code != 200 {
		t.Fatalf("run-tests: %d %s", r.Code, r.Body)
	}
	id := r.JSON(t)["id"].(string)
	run := func(i int) string { return "trun_" + strings.TrimPrefix(id, "tinv_") + "_" + strconv.Itoa(i) }
	// buckets is each group's one bucket: "<status> <run ids>".
	buckets := func(groups []map[string]any) []string {
		t.Helper()
		var out []string
		for _, g := range groups {
			bs := g["buckets"].([]any)
			if len(bs) != 1 {
				t.Fatalf("buckets %v", bs)
			}
			b := bs[0].(map[string]any)
			var runs []string
			for _, id := range b["test_run_ids"].([]any) {
				runs = append(runs, id.(string))
			}
			slices.Sort(runs) // final buckets list runs in the order they finished
			out = append(out, b["status"].(string)+" "+strings.Join(runs, ","))
		}
		return out
	}
	want := func(first, second string) []string {
		return []string{first + " " + run(0) + "," + run(1), second + " " + run(2) + "," + run(3)}
	}
	var created invocation
	_ = json.Unmarshal(r.Body, &created)
	if got := buckets(created.ResultGroups); !slices.Equal(got, want("pending", "pending")) {
		t.Fatalf("run-tests answer: %q", got)
	}
	// Every run is in the model's hands: outstanding.
	eventually(t, 10*time.Second, "every run asks the model", func() bool { return srv.Len() == 4 })
	got := getInvocation(t, s, id)
	if b := buckets(got.ResultGroups); !slices.Equal(b, want("pending", "pending")) || got.Status != "running" {
		t.Fatalf("while running: %q, invocation %s", b, got.Status)
	}

	bucketed := func() {
		t.Helper()
		eventually(t, 30*time.Second, "bucketing completes", func() bool {
			b := getInvocation(t, s, id).BucketingStatus
			return b != nil && *b == "completed"
		})
	}
	close(release)
	bucketed()
	if b := buckets(getInvocation(t, s, id).ResultGroups); !slices.Equal(b, want("passed", "passed")) {
		t.Fatalf("finished: %q", b)
	}

	// Resubmitting a run of the first test: its bucket is pending again.
	release = hold()
	calls := srv.Len()
	r = call(t, s, "POST", "/v1/convai/test-invocations/"+id+"/resubmit", adminKey, fmt.Sprintf(`{"test_run_ids":[%q],"agent_id":%q}`, run(1), agent))
	if r.Code != 200 {
		t.Fatalf("resubmit: %d %s", r.Code, r.Body)
	}
	eventually(t, 10*time.Second, "the resubmitted run asks the model", func() bool { return srv.Len() == calls+1 })
	if b := buckets(getInvocation(t, s, id).ResultGroups); !slices.Equal(b, want("pending", "passed")) {
		t.Fatalf("resubmitted: %q", b)
	}
	close(release)
	bucketed()
	if b := buckets(getInvocation(t, s, id).ResultGroups); !slices.Equal(b, want("passed", "passed")) {
		t.Fatalf("resubmission finished: %q", b)
	}
}
