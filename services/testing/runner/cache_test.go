package runner

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/pkg/llm"
	"github.com/voiceai-platform/voiceai/pkg/llm/llmtest"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

func kvCache(t *testing.T) *KVCache {
	t.Helper()
	js := testenv.JetStreamAt(t, testenv.StartNATS(t))
	c, err := OpenKVCache(context.Background(), js, time.Hour, 1, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func cacheEntries(t *testing.T, c *KVCache) int {
	t.Helper()
	keys, err := c.KV.Keys(context.Background())
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return len(keys)
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
	cache := kvCache(t)
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
	if n := cacheEntries(t, cache); n != 4 {
		t.Fatalf("%d cache entries, want 4 (agent turn and 3 verdicts)", n)
	}

	// Another runner (a new executor, the shared bucket) runs it again.
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
	entries := cacheEntries(t, cache)
	calls = srv.Len()
	for range 2 {
		exec.Execute(context.Background(), cachedRun(t, false))
	}
	if srv.Len()-calls < 4 || cacheEntries(t, cache) != entries {
		t.Fatalf("uncached: %d calls, %d entries (was %d)", srv.Len()-calls, cacheEntries(t, cache), entries)
	}
}
