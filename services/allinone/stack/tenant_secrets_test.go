package stack

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/llm/llmtest"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
)

// Issue 47, findings 3 and 4: no key can starve or take down another
// workspace, and no secret leaves in clear through an agent's endpoint.

// echoing is a team endpoint that echoes the credentials it was sent:
// in its reply when they are right (key), in a 401 when they are not,
// and in a 500's plain-text body when broken is set.
func echoing(key string, broken *atomic.Bool) llmtest.Handler {
	return func(req llmtest.Request) llmtest.Reply {
		sent := "Authorization=" + req.Header.Get("Authorization") + " X-Team-Token=" + req.Header.Get("X-Team-Token")
		switch {
		case broken != nil && broken.Load():
			return llmtest.Reply{Status: http.StatusInternalServerError, Raw: []byte("upstream exploded; request had " + sent)}
		case req.BearerToken() != key:
			return llmtest.Error(http.StatusUnauthorized, "invalid_request_error", "bad credentials: "+sent)
		}
		return llmtest.OK("You sent " + sent + ". We open nine to five.")
	}
}

// secretAgent stores key (and token) as workspace secrets of the key's
// workspace and creates an agent whose own endpoint at url is sent them.
func secretAgent(t *testing.T, s *Stack, apiKey, url, key, token string, seen *[]string) string {
	t.Helper()
	do := func(path, body string, want int) map[string]any {
		t.Helper()
		r := call(t, s, "POST", path, apiKey, body)
		*seen = append(*seen, string(r.Body))
		if r.Code != want {
			t.Fatalf("POST %s: %d %s", path, r.Code, r.Body)
		}
		return r.JSON(t)
	}
	keyID := do("/v1/convai/secrets", `{"name":"endpoint key","value":"`+key+`"}`, 200)["secret_id"].(string)
	headers := ""
	if token != "" {
		tokenID := do("/v1/convai/secrets", `{"name":"endpoint token","value":"`+token+`"}`, 200)["secret_id"].(string)
		headers = `,"request_headers":{"X-Team-Token":{"secret_id":"` + tokenID + `"}}`
	}
	return do("/v1/convai/agents/create", `{"name":"Echo bot","conversation_config":{"agent":{"first_message":"Hello.",
		"prompt":{"prompt":"You are Echo bot.","llm":"custom-llm",
		  "custom_llm":{"url":"`+url+`","model_id":"echo","api_key":{"secret_id":"`+keyID+`"}`+headers+`}}}}}`, 201)["agent_id"].(string)
}

// ranInvocation is what these tests read of an invocation.
type ranInvocation struct {
	Status   string `json:"status"`
	TestRuns []struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	} `json:"test_runs"`
}

// runAs runs tests on agent with apiKey, waits for the invocation to
// complete and answers its JSON and its JUnit XML.
func runAs(t *testing.T, s *Stack, apiKey, agent string, repeat int, tests ...string) (inv ranInvocation, body, junit string) {
	t.Helper()
	refs := make([]string, len(tests))
	for i, id := range tests {
		refs[i] = fmt.Sprintf(`{"test_id":%q}`, id)
	}
	r := call(t, s, "POST", "/v1/convai/agents/"+agent+"/run-tests", apiKey, fmt.Sprintf(`{"tests":[%s],"repeat_count":%d}`, strings.Join(refs, ","), repeat))
	if r.Code != 200 {
		t.Fatalf("run-tests: %d %s", r.Code, r.Body)
	}
	id := r.JSON(t)["id"].(string)
	eventually(t, 30*time.Second, "invocation "+id+" completes", func() bool {
		r := call(t, s, "GET", "/v1/convai/test-invocations/"+id, apiKey, "")
		body = string(r.Body)
		return r.Code == 200 && json.Unmarshal(r.Body, &inv) == nil && inv.Status == "completed"
	})
	x := call(t, s, "GET", "/v1/convai/test-invocations/"+id+"?format=junit", apiKey, "")
	if x.Code != 200 || !strings.Contains(string(x.Body), "<testsuite") {
		t.Fatalf("junit: %d %s", x.Code, x.Body)
	}
	return inv, body, string(x.Body)
}

// forms are the ways a value may be written out in clear.
func forms(values ...string) []string {
	var out []string
	for _, v := range values {
		out = append(out, v, base64.StdEncoding.EncodeToString([]byte(v)), base64.RawURLEncoding.EncodeToString([]byte(v)))
	}
	return out
}

// noneHolds fails if any of texts holds any of values in any form.
func noneHolds(t *testing.T, what string, texts []string, values ...string) {
	t.Helper()
	for _, text := range texts {
		for _, f := range forms(values...) {
			if strings.Contains(text, f) {
				t.Fatalf("%s holds a secret (%q): %.400s", what, f, text)
			}
		}
	}
}

// scanStreams reads every message of every stream, data and headers, and
// fails if one holds any of values; it answers how many it read.
func scanStreams(t *testing.T, s *Stack, values ...string) int {
	t.Helper()
	ctx := context.Background()
	js := testenv.JetStreamAt(t, s.NATSURL)
	scanned := 0
	for info := range js.ListStreams(ctx).Info() {
		st, err := js.Stream(ctx, info.Config.Name)
		if err != nil {
			t.Fatal(err)
		}
		for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
			m, err := st.GetMsg(ctx, seq)
			if err != nil {
				continue // deleted (a work queue's acknowledged job)
			}
			scanned++
			noneHolds(t, fmt.Sprintf("stream %s message %d (%s)", info.Config.Name, seq, m.Subject),
				[]string{string(m.Data), fmt.Sprint(m.Header)}, values...)
		}
	}
	return scanned
}

// An endpoint that echoes its Authorization header and the header secret
// (in its answers, in a 401, in a 500): after a full run (an llm test and
// a simulation), simulate-conversation and failed runs, neither secret's
// value is in any API answer, JUnit file, event of any stream or log line,
// and where the endpoint echoed it the reader sees [redacted secret].
func TestEchoingEndpointLeaksNoSecret(t *testing.T) {
	t.Parallel()
	const key, token, wrong = "sk-tenant-echo-5d0c1e9a7b", "hdr-tenant-token-31f7aa", "sk-tenant-wrong-8e2b44c1"
	s := startWithEndpoints(t, llmtest.AgentAndJudge(
		func(req llmtest.Request) llmtest.Reply { // the simulated user: asks until the agent has answered
			for _, m := range req.Messages {
				if strings.Contains(m.Content, "nine to five") {
					return llmtest.OK("Thanks! [END_CONVERSATION]")
				}
			}
			return llmtest.OK("When do you open?")
		},
		llmtest.Fixed(0, `{"result":"success","rationale":["it gives the hours"],"summary":"the agent gives the hours"}`)), nil)
	var broken atomic.Bool
	echo := llmtest.NewServer(echoing(key, &broken))
	t.Cleanup(echo.Close)
	var seen []string
	good := secretAgent(t, s.Stack, adminKey, echo.URL, key, token, &seen)
	bad := secretAgent(t, s.Stack, adminKey, echo.URL, wrong, token, &seen)
	hours := createTest(t, s.Stack, hoursTest)
	sim := createTest(t, s.Stack, `{"type":"simulation","name":"Hours, simulated","simulation_scenario":"You want the opening hours.",
	  "simulation_max_turns":3,"success_conditions":["gives the opening hours"]}`)

	// A full run: the endpoint echoed both secrets into every reply.
	inv, body, junit := runAs(t, s.Stack, adminKey, good, 1, hours, sim)
	seen = append(seen, body, junit)
	if len(inv.TestRuns) != 2 || !strings.Contains(body, "You sent Authorization=Bearer [redacted secret] X-Team-Token=[redacted secret]") {
		t.Fatalf("the echoing agent's runs: %s", body)
	}
	for _, r := range inv.TestRuns {
		if r.Status != "passed" {
			t.Fatalf("run %+v", r)
		}
	}
	for _, j := range s.judge.Requests() { // the judge and the simulated user never saw them either
		noneHolds(t, "a request to the platform's model", []string{string(j.Body)}, key, token)
	}

	// simulate-conversation, on the echoing agent and on the failing one.
	for _, agent := range []string{good, bad} {
		r := call(t, s.Stack, "POST", "/v1/convai/agents/"+agent+"/simulate-conversation", adminKey, `{"simulation_specification":{
		    "simulated_user_config":{"first_message":"Hi, when are you open?","prompt":{"prompt":"You want the opening hours."}}},
		  "extra_evaluation_criteria":[{"id":"hours","name":"Hours","type":"prompt","conversation_goal_prompt":"The agent gives the hours"}],
		  "new_turns_limit":2}`)
		seen = append(seen, string(r.Body))
		if r.Code != 200 || !strings.Contains(string(r.Body), "[redacted secret]") {
			t.Fatalf("simulate-conversation: %d %s", r.Code, r.Body)
		}
	}

	// Failed runs: a 401 that echoes the wrong key, a 500 that echoes the
	// right one.
	inv, body, junit = runAs(t, s.Stack, adminKey, bad, 2, hours)
	seen = append(seen, body, junit)
	for _, r := range inv.TestRuns {
		if r.Status != "failed" || !strings.Contains(r.Error, "HTTP 401") || !strings.Contains(r.Error, "bad credentials: Authorization=Bearer [redacted secret]") {
			t.Fatalf("a run with the wrong key: %+v", r)
		}
	}
	broken.Store(true)
	inv, body, junit = runAs(t, s.Stack, adminKey, good, 1, hours, sim)
	seen = append(seen, body, junit)
	for _, r := range inv.TestRuns {
		if r.Status != "failed" || !strings.Contains(r.Error, "HTTP 500") || !strings.Contains(r.Error, "[redacted secret]") {
			t.Fatalf("a run on the broken endpoint: %+v\n%s\n%d requests", r, body, echo.Len())
		}
	}
	list := call(t, s.Stack, "GET", "/v1/convai/test-invocations?page_size=100", adminKey, "")
	seen = append(seen, string(list.Body))

	// The endpoint did get them: the check below can fail.
	if reqs := echo.Requests(); len(reqs) == 0 || reqs[0].Header.Get("X-Team-Token") != token {
		t.Fatalf("the endpoint was not sent the secrets: %d requests", len(reqs))
	}
	noneHolds(t, "an API answer", seen, key, token, wrong)
	noneHolds(t, "a log line", []string{s.logs.String()}, key, token, wrong)
	if n := scanStreams(t, s.Stack, key, token, wrong); n == 0 {
		t.Fatal("no event scanned")
	}
}

// Workspace A points an agent at workspace B's endpoint URL with a wrong
// key and fails until its breaker opens; B's agent on the same URL, with
// its own key, keeps passing at once, and never sees A's error text.
func TestEndpointBreakerOfAnotherWorkspaceStaysClosed(t *testing.T) {
	t.Parallel()
	const bKey, aKey = "sk-workspace-b-right-4c1d", "sk-workspace-a-wrong-90fe"
	s := startWithEndpoints(t, llmtest.Fixed(0, `{"result":"success","rationale":["ok"],"summary":"ok"}`), nil)
	endpoint := llmtest.NewServer(echoing(bKey, nil))
	t.Cleanup(endpoint.Close)
	b := createWorkspace(t, s.Stack, "Workspace B")
	var seen []string

	attacker := secretAgent(t, s.Stack, adminKey, endpoint.URL, aKey, "", &seen)
	aTest := createTest(t, s.Stack, hoursTest)
	r := call(t, s.Stack, "POST", "/v1/convai/agent-testing/create", b.APIKey, hoursTest)
	if r.Code != 200 {
		t.Fatalf("B's test: %d %s", r.Code, r.Body)
	}
	bTest := r.JSON(t)["id"].(string)
	victim := secretAgent(t, s.Stack, b.APIKey, endpoint.URL, bKey, "", &seen)

	inv, _, _ := runAs(t, s.Stack, adminKey, attacker, 12, aTest)
	open := 0
	for _, r := range inv.TestRuns {
		if r.Status != "failed" || !strings.Contains(r.Error, "HTTP 401") {
			t.Fatalf("A's run: %+v", r)
		}
		if strings.Contains(r.Error, "in a row") {
			open++
		}
	}
	if open == 0 {
		t.Fatalf("A's breaker never opened: %+v", inv.TestRuns)
	}
	// Within the breaker's 30 s, B's runs on the same URL go through.
	inv, body, junit := runAs(t, s.Stack, b.APIKey, victim, 4, bTest)
	seen = append(seen, body, junit)
	for _, r := range inv.TestRuns {
		if r.Status != "passed" || r.Error != "" {
			t.Fatalf("B's run after A's failures: %+v", r)
		}
	}
	if strings.Contains(body, "bad credentials") || strings.Contains(body, "in a row") || strings.Contains(junit, "bad credentials") {
		t.Fatalf("B sees A's error text: %s", body)
	}
	noneHolds(t, "an API answer", seen, aKey, bKey)
	noneHolds(t, "a log line", []string{s.logs.String()}, aKey, bKey)
}

// A convai_write key cannot send an admin's secret to an endpoint it
// controls: not by creating an agent, not by moving an agent's endpoint or
// copying the secret into a header, not by a run's override. It may edit
// the rest of the agent, and its runs still send the secret where the
// admin chose. Each refusal is a 403 secret_binding_forbidden in the
// spec's shape, and the thief's endpoint is never called.
func TestAWriterCannotRebindAnAdminsSecret(t *testing.T) {
	t.Parallel()
	const key = "sk-admins-only-key-61be0f"
	s := startWithEndpoints(t, llmtest.Fixed(0, `{"result":"success","rationale":["ok"],"summary":"ok"}`), nil)
	team := llmtest.NewServer(echoing(key, nil))
	t.Cleanup(team.Close)
	thief := llmtest.NewServer(llmtest.Fixed(0, "thanks for the key"))
	t.Cleanup(thief.Close)
	var seen []string
	agent := secretAgent(t, s.Stack, adminKey, team.URL, key, "", &seen)
	writer, _, _ := newKey(t, s.Stack, adminKey, `["convai_read","convai_write"]`, "")
	var got struct {
		ConversationConfig struct {
			Agent struct {
				Prompt struct {
					CustomLLM struct {
						APIKey map[string]string `json:"api_key"`
					} `json:"custom_llm"`
				} `json:"prompt"`
			} `json:"agent"`
		} `json:"conversation_config"`
	}
	if err := json.Unmarshal(call(t, s.Stack, "GET", "/v1/convai/agents/"+agent, writer, "").Body, &got); err != nil {
		t.Fatal(err)
	}
	secretID := got.ConversationConfig.Agent.Prompt.CustomLLM.APIKey["secret_id"]
	if secretID == "" {
		t.Fatal("the agent names no secret")
	}
	stolen := `{"url":"` + thief.URL + `","model_id":"x","api_key":{"secret_id":"` + secretID + `"}}`
	hours := createTest(t, s.Stack, hoursTest)
	for what, r := range map[string]response{
		"create": call(t, s.Stack, "POST", "/v1/convai/agents/create", writer,
			`{"name":"mine","conversation_config":{"agent":{"prompt":{"llm":"custom-llm","custom_llm":`+stolen+`}}}}`),
		"move the endpoint": call(t, s.Stack, "PATCH", "/v1/convai/agents/"+agent, writer,
			`{"conversation_config":{"agent":{"prompt":{"custom_llm":{"url":"`+thief.URL+`"}}}}}`),
		"copy into a header": call(t, s.Stack, "PATCH", "/v1/convai/agents/"+agent, writer,
			`{"conversation_config":{"agent":{"prompt":{"custom_llm":{"request_headers":{"X-Copy":{"secret_id":"`+secretID+`"}}}}}}}`),
		"override a run": call(t, s.Stack, "POST", "/v1/convai/agents/"+agent+"/run-tests", writer,
			`{"tests":[{"test_id":"`+hours+`"}],"agent_config_override":{"conversation_config":{"agent":{"prompt":{"llm":"custom-llm","custom_llm":`+stolen+`}}}}}`),
	} {
		t.Run(what, func(t *testing.T) { wantError(t, r, 403, "secret_binding_forbidden") })
	}
	if r := call(t, s.Stack, "PATCH", "/v1/convai/agents/"+agent, writer, `{"conversation_config":{"agent":{"prompt":{"prompt":"You are Echo bot, v2."}}}}`); r.Code != 200 {
		t.Fatalf("a writer edits the prompt: %d %s", r.Code, r.Body)
	}
	inv, _, _ := runAs(t, s.Stack, writer, agent, 1, hours)
	if len(inv.TestRuns) != 1 || inv.TestRuns[0].Status != "passed" {
		t.Fatalf("the writer's run: %+v", inv.TestRuns)
	}
	if thief.Len() != 0 || team.Len() == 0 {
		t.Fatalf("the thief's endpoint got %d calls, the team's %d", thief.Len(), team.Len())
	}
}
