package runner

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/llm"
	"github.com/voiceai-platform/voiceai/pkg/llm/llmtest"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// memCache is a ResponseCache in memory, shared like the runners' bucket
// (adapters.KVCache) by every executor given it.
type memCache struct {
	mu      sync.Mutex
	entries map[string][]byte
}

func (c *memCache) Get(_ context.Context, key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.entries[key]
	return v, ok
}

func (c *memCache) Put(_ context.Context, key string, value []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[key] = value
}

func (c *memCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// cachedRun is a run of an invocation that asked for caching.
func cachedRun(t *testing.T, on bool) Run {
	r := newRun(t, domain.TypeLLM, hoursTest)
	r.Invocation = proto.Clone(r.Invocation).(*testingv1.Invocation)
	r.Invocation.CacheModelResponses = on
	return r
}

// With caching asked for, running the same run again makes no model call
// and gives the same result, votes included; any change to a request (the
// prompt, the model) or another repeat calls the model; without the flag
// nothing is cached.
func TestModelResponseCache(t *testing.T) {
	cache := &memCache{entries: map[string][]byte{}}
	// A flaky judge: every first judgement of a request fails, the next
	// ones pass; cached, the rerun must replay that exactly.
	m, srv := newOpenAI(t, llmtest.AgentAndJudge(llmtest.Fixed(0, hoursReply),
		llmtest.ByAttempt(llmtest.Verdict("failure", "no"), llmtest.Verdict("success", "yes"))), nil)
	exec := &Executor{Model: m, JudgeVotes: 3, Cache: cache, Now: fixedClock()}

	first := exec.Execute(context.Background(), cachedRun(t, true))
	calls := srv.Len()
	if first.GetStatus() != domain.RunPassed || calls != 4 || len(first.GetJudgeVotes()) != 3 || totalCalls(first) != 4 {
		t.Fatalf("first run: %s, %d calls, votes %v", first.GetStatus(), calls, first.GetJudgeVotes())
	}
	if n := cache.len(); n != 4 {
		t.Fatalf("%d cache entries, want 4 (agent turn and 3 verdicts)", n)
	}

	// Another runner (a new executor, the shared cache) runs it again.
	again := (&Executor{Model: m, JudgeVotes: 3, Cache: cache, Now: fixedClock()}).Execute(context.Background(), cachedRun(t, true))
	if srv.Len() != calls {
		t.Fatalf("the rerun made %d model calls", srv.Len()-calls)
	}
	if string(again.GetAgentResponsesJson()) != string(first.GetAgentResponsesJson()) || again.GetStatus() != first.GetStatus() ||
		!proto.Equal(&testingv1.RunResult{JudgeVotes: again.GetJudgeVotes()}, &testingv1.RunResult{JudgeVotes: first.GetJudgeVotes()}) {
		t.Fatalf("rerun differs:\n%s %v\n%s %v", again.GetAgentResponsesJson(), again.GetJudgeVotes(), first.GetAgentResponsesJson(), first.GetJudgeVotes())
	}
	if u, a := again.GetUsage(), again.GetAgentUsage(); totalCalls(again) != 0 || u.GetCachedModelCalls() != 3 || a.GetCachedModelCalls() != 1 ||
		u.GetTotalTokens()+a.GetTotalTokens() != 0 || len(again.GetAgentTurnMs()) != 0 {
		t.Fatalf("rerun usage %+v, agent %+v, turns %v", u, a, again.GetAgentTurnMs())
	}

	// A changed prompt is another request.
	changed := cachedRun(t, true)
	changed.AgentConfig = []byte(strings.Replace(agentConfig, "nine to five", "ten to six", 1))
	exec.Execute(context.Background(), changed)
	if srv.Len() == calls {
		t.Fatal("a changed prompt was answered from the cache")
	}
	calls = srv.Len()

	// Another repeat of the test is another sample.
	repeat := cachedRun(t, true)
	repeat.Index = 4
	exec.Execute(context.Background(), repeat)
	if srv.Len() == calls {
		t.Fatal("another repeat was answered from the cache")
	}
	calls = srv.Len()

	// Another model on the same server is another request.
	cl, err := llm.New(llm.Config{BaseURL: srv.URL, Model: "other-model", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	(&Executor{Now: time.Now, Model: OpenAI{Client: cl}, Cache: cache}).Execute(context.Background(), cachedRun(t, true))
	if srv.Len() == calls {
		t.Fatal("another model was answered from the cache")
	}

	// Without the flag: every request goes out, nothing is stored.
	entries := cache.len()
	calls = srv.Len()
	for range 2 {
		exec.Execute(context.Background(), cachedRun(t, false))
	}
	if srv.Len()-calls < 4 || cache.len() != entries {
		t.Fatalf("uncached: %d calls, %d entries (was %d)", srv.Len()-calls, cache.len(), entries)
	}
}
