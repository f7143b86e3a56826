package stack

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/llm/llmtest"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

// Finding 7 of the abuse review: one run-tests of 5,000 copies of a test
// repeated 50 times stored 250,000 runs in a stream kept forever, and
// nothing bounded how many such invocations a workspace queued. Now a
// workspace's active invocations and queued runs are bounded (duplicate
// test ids count, times repeat_count), a refusal is 429 quota_exceeded,
// another workspace is unaffected, and the quota is freed when an
// invocation completes or is cancelled.
func TestWorkspaceQuotasOnRunTests(t *testing.T) {
	t.Parallel()
	// Every model call (the agent's turn, the judge) waits until release:
	// runs stay queued or running until then.
	release := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	model := llmtest.NewServer(func(req llmtest.Request) llmtest.Reply {
		select {
		case <-release:
		case <-req.Context.Done():
		}
		return llmtest.OK(`{"result":"success","rationale":["ok"],"summary":"ok"}`)
	})
	t.Cleanup(func() { open(); model.Close() }) // before the stack stops
	reg := prometheus.NewRegistry()
	cfg := adminConfig(t, func(c *Config) {
		c.Runner.Provider, c.Runner.BaseURL, c.Runner.LLMModel = "openai", model.URL, "platform-model"
		c.Testing.MaxActiveInvocations, c.Testing.MaxQueuedRuns, c.Testing.RunRetention = 2, 12, 48*time.Hour
	})
	s := run(t, cfg, slog.New(slog.NewTextHandler(&testkit.LogBuffer{}, nil)), reg)

	agent := agentWith(t, s)
	hours := createTest(t, s, hoursTest)
	runTests := func(key, agent, test string, copies, repeat int) response {
		refs := strings.TrimSuffix(strings.Repeat(fmt.Sprintf(`{"test_id":%q},`, test), copies), ",")
		return call(t, s, "POST", "/v1/convai/agents/"+agent+"/run-tests", key, fmt.Sprintf(`{"tests":[%s],"repeat_count":%d}`, refs, repeat))
	}
	accepted := func(r response) string {
		t.Helper()
		if r.Code != 200 {
			t.Fatalf("run-tests: %d %s", r.Code, r.Body)
		}
		return r.JSON(t)["id"].(string)
	}
	refused := func(r response, limit, would string) {
		t.Helper()
		wantError(t, r, 429, "quota_exceeded")
		if msg := r.JSON(t)["detail"].(map[string]any)["message"].(string); !strings.Contains(msg, "limited to "+limit+" ") || !strings.Contains(msg, "make them "+would+".") {
			t.Fatalf("message %q; want the limit %s and %s", msg, limit, would)
		}
	}

	// Queued runs: 3 copies × 2 repeats are 6 runs; 7 more would be 13.
	first := accepted(runTests(adminKey, agent, hours, 3, 2))
	refused(runTests(adminKey, agent, hours, 1, 7), "12", "13")
	second := accepted(runTests(adminKey, agent, hours, 2, 3)) // 12 exactly
	// Active invocations: a third is refused, however small.
	refused(runTests(adminKey, agent, hours, 1, 1), "2", "3")

	// Another workspace is not affected.
	other := createWorkspace(t, s, "Other team")
	otherAgent := createAgent(t, s, other.APIKey, `{"name":"Front desk"}`)
	r := call(t, s, "POST", "/v1/convai/agent-testing/create", other.APIKey, hoursTest)
	if r.Code != 200 {
		t.Fatalf("test: %d %s", r.Code, r.Body)
	}
	accepted(runTests(other.APIKey, otherAgent, r.JSON(t)["id"].(string), 2, 6))

	// A cancelled invocation frees its place and its runs.
	if r := call(t, s, "POST", "/v1/convai/test-invocations/"+second+"/cancel", adminKey, ""); r.Code != 200 {
		t.Fatalf("cancel: %d %s", r.Code, r.Body)
	}
	third := accepted(runTests(adminKey, agent, hours, 2, 3))
	refused(runTests(adminKey, agent, hours, 1, 1), "2", "3")

	// Completed invocations free theirs.
	open()
	for _, id := range []string{first, third} {
		awaitCompleted(t, s, id, 60*time.Second)
	}
	accepted(runTests(adminKey, agent, hours, 2, 6)) // the whole quota of runs again

	// Each refusal was counted by the quota it hit.
	want := map[string]float64{"active_invocations": 2, "queued_runs": 1}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		if f.GetName() == "voiceai_testing_quota_refusals_total" {
			for _, m := range f.GetMetric() {
				got[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("voiceai_testing_quota_refusals_total %v; want %v", got, want)
	}

	// The runs log keeps runs for the configured retention.
	js, err := jetstream.New(testenv.ConnAt(t, s.NATSURL))
	if err != nil {
		t.Fatal(err)
	}
	info, err := js.Stream(context.Background(), events.TestRunsStream)
	if err != nil {
		t.Fatal(err)
	}
	if age := info.CachedInfo().Config.MaxAge; age != 48*time.Hour {
		t.Fatalf("%s MaxAge %s; want the run retention, 48h", events.TestRunsStream, age)
	}
}
