package stack

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/llm/llmtest"
	"github.com/voiceai-platform/voiceai/pkg/wire"
)

// The load test page in a real browser (e2e/browser/loadtest.test.mjs):
// a finished load test against an endpoint that slows with load is drawn
// and tabled as the API gives it, and the form starts another.
func TestLoadTestConsoleInBrowser(t *testing.T) {
	t.Parallel()
	script := e2eSuite(t, "browser")
	s := startWithEndpoints(t, llmtest.Fixed(0, `{"result":"success","rationale":["ok"],"summary":"ok"}`), nil)
	team := newCrowdedEndpoint(t, nil)
	agent := s.streamAgent(t, team.URL, "chat_completions")
	test := createTest(t, s.Stack, `{"type":"llm","name":"Opening hours under load",
	  "chat_history":[{"role":"user","message":"What are your opening hours?","time_in_call_secs":3}],
	  "success_condition":"The agent states the opening hours","latency_budget":{"first_token_p95_ms":400}}`)
	var lt wire.LoadTest
	_ = json.Unmarshal(s.call(t, "POST", "/v1/convai/agents/"+agent+"/load-tests", `{"test_id":"`+test+`","steps":[1,10,50]}`, 201), &lt)
	eventually(t, 60*time.Second, "the load test completes", func() bool {
		var cur wire.LoadTest
		return json.Unmarshal(s.call(t, "GET", "/v1/convai/load-tests/"+lt.ID, "", 200), &cur) == nil && cur.Status == "completed" &&
			cur.BrokeBudgetAtStep != nil && *cur.BrokeBudgetAtStep == 2
	})
	artifacts := screenshotsDir(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("screenshots in %s", artifacts)
		}
	})
	runE2E(t, s.Stack, script, []string{"--test", "--test-force-exit", "--test-reporter=spec", "loadtest.test.mjs"},
		"VOICEAI_ARTIFACTS="+artifacts, "VOICEAI_E2E_LOAD_TEST_ID="+lt.ID, "VOICEAI_E2E_AGENT_ID="+agent, "VOICEAI_E2E_TEST_ID="+test)
}
