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
		JudgeVotes: 3, ModelCacheTTL: 24 * time.Hour}
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
