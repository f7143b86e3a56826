package testing

import (
	"strings"
	"testing"
	"time"
)

// The judge's votes must let a majority decide, and a bad value stops the
// runner at start with a message naming the variable.
func TestRunnerConfigJudgeVotesAndCacheTTL(t *testing.T) {
	ok := RunnerConfig{Provider: "offline", Concurrency: 8, RunTimeout: time.Minute, AckWait: 30 * time.Second,
		JudgeVotes: 3, ModelCacheTTL: 24 * time.Hour, EndpointConcurrency: 4, EndpointTimeout: 30 * time.Second}
	for _, votes := range []int{1, 3, 5, 9} {
		c := ok
		c.JudgeVotes = votes
		if err := c.Validate(); err != nil {
			t.Errorf("%d votes: %v", votes, err)
		}
	}
	for _, votes := range []int{0, -1, 2, 4, 11} {
		c := ok
		c.JudgeVotes = votes
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "VOICEAI_JUDGE_VOTES") {
			t.Errorf("%d votes: %v", votes, err)
		}
	}
	c := ok
	c.ModelCacheTTL = time.Second
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "VOICEAI_MODEL_CACHE_TTL") {
		t.Errorf("a 1s TTL: %v", err)
	}
}

// The judge model defaults to the platform provider's settings, one by
// one; a judge of its own is checked as the provider is.
func TestRunnerConfigJudgeModel(t *testing.T) {
	c := RunnerConfig{Provider: "openai", BaseURL: "http://llm.internal/v1", APIKey: "k", LLMModel: "agent-model",
		Concurrency: 8, RunTimeout: time.Minute, AckWait: 30 * time.Second, JudgeVotes: 3, ModelCacheTTL: time.Hour,
		EndpointConcurrency: 4, EndpointTimeout: 30 * time.Second}
	if p, u, k, m := c.judge(); p != "openai" || u != c.BaseURL || k != "k" || m != "agent-model" {
		t.Fatalf("defaults: %s %s %s %s", p, u, k, m)
	}
	c.JudgeModel = "judge-model"
	if _, _, _, m := c.judge(); m != "judge-model" {
		t.Fatal(m)
	}
	judge, err := c.Model()
	if err != nil || judge.ModelName() != "judge-model" {
		t.Fatalf("judge %v %v", judge, err)
	}
	c.JudgeProvider, c.JudgeBaseURL = "openai", ""
	c.BaseURL = ""
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "VOICEAI_LLM_PROVIDER=openai") {
		t.Fatalf("no base URL: %v", err)
	}
	c.Provider, c.JudgeProvider = "offline", "ollama"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "VOICEAI_JUDGE_PROVIDER") {
		t.Fatalf("unknown judge provider: %v", err)
	}
}

func TestLimitsValidate(t *testing.T) {
	for _, c := range []struct {
		l  Limits
		ok bool
	}{
		{Limits{MaxActiveInvocations: 20, MaxQueuedRuns: 250_000, RunRetention: 2160 * time.Hour}, true},
		{Limits{}, true}, // no quotas, runs kept forever
		{Limits{RunRetention: 24 * time.Hour}, true},
		{Limits{RunRetention: time.Hour}, false}, // an invocation could outlive its runs
		{Limits{MaxActiveInvocations: -1}, false},
		{Limits{MaxQueuedRuns: -1}, false},
		{Limits{MaxLoadCallers: 500}, true},
		{Limits{MaxLoadCallers: 10_001}, false},
	} {
		if err := c.l.Validate(); (err == nil) != c.ok {
			t.Errorf("%+v: %v; want ok %v", c.l, err, c.ok)
		}
	}
}
