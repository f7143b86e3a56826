package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/wire"
)

// agentWith creates an agent whose configuration the offline model
// answers from.
func agentWith(t *testing.T, s *Stack) string {
	t.Helper()
	return createAgent(t, s, adminKey, `{"name":"Bookings",
	  "conversation_config":{"agent":{"first_message":"Hello {{customer}}, how can I help?",
	    "dynamic_variables":{"dynamic_variable_placeholders":{"customer":"guest"}},
	    "prompt":{"prompt":"You help {{customer}} book tables. Our opening hours are nine to five every weekday. Refunds are never given for cancelled bookings.",
	      "tools":[{"type":"client","name":"book_table","description":"Book a table reservation for guests",
	        "parameters":{"type":"object","properties":{"guests":{"type":"number"},"date":{"type":"string"}}}}]}}}}`)
}

// dropOpeningHours changes agentWith's prompt to one without the opening
// hours, so that the hours test passes before and fails after: the known
// mix the reliability and label tests measure.
func dropOpeningHours(t *testing.T, s *Stack, agent string) {
	t.Helper()
	if r := call(t, s, "PATCH", "/v1/convai/agents/"+agent, adminKey, `{"conversation_config":{"agent":{"prompt":{"prompt":"You help guests book tables."}}}}`); r.Code != 200 {
		t.Fatalf("prompt change: %d %s", r.Code, r.Body)
	}
}

// startForTesting starts a stack whose admin key is not rate-limited in
// practice: tests poll invocations.
func startForTesting(t *testing.T) *Stack {
	return startAdmin(t)
}

// hoursTest passes while the agent's prompt (agentWith's) states the
// opening hours, and fails once it no longer does.
const hoursTest = `{"type":"llm","name":"Opening hours",
  "chat_history":[{"role":"user","message":"What are your opening hours?","time_in_call_secs":3}],
  "success_condition":"The agent states the opening hours nine to five"}`

func createTest(t *testing.T, s *Stack, body string) string {
	t.Helper()
	return postForID(t, s, adminKey, "/v1/convai/agent-testing/create", body, 200, "id")
}

type invocation struct {
	ID              string           `json:"id"`
	AgentID         string           `json:"agent_id"`
	RepeatCount     int              `json:"repeat_count"`
	BucketingStatus *string          `json:"bucketing_status"`
	Status          string           `json:"status"`
	Cancelled       bool             `json:"cancelled"`
	ResultGroups    []map[string]any `json:"result_groups"`
	TestRuns        []struct {
		TestRunID       string               `json:"test_run_id"`
		Status          string               `json:"status"`
		TestID          string               `json:"test_id"`
		TestInfo        map[string]any       `json:"test_info"`
		AgentResponses  []map[string]any     `json:"agent_responses"`
		ConditionResult wire.ConditionResult `json:"condition_result"`
		Metadata        map[string]any       `json:"metadata"`
		Attempt         int                  `json:"attempt"`
	} `json:"test_runs"`
}

func getInvocation(t *testing.T, s *Stack, id string) invocation {
	t.Helper()
	r := call(t, s, "GET", "/v1/convai/test-invocations/"+id, adminKey, "")
	if r.Code != 200 {
		t.Fatalf("get invocation: %d %s", r.Code, r.Body)
	}
	var inv invocation
	if err := json.Unmarshal(r.Body, &inv); err != nil {
		t.Fatalf("%v: %s", err, r.Body)
	}
	return inv
}

func TestAgentTestingThroughTheGateway(t *testing.T) {
	t.Parallel()
	s := startForTesting(t)
	agent := agentWith(t, s)
	hours := createTest(t, s, `{"type":"llm","name":"Opening hours",
	  "chat_history":[{"role":"user","message":"What are your opening hours?","time_in_call_secs":3}],
	  "success_condition":"The agent states the opening hours nine to five",
	  "success_examples":[{"response":"We are open nine to five every weekday.","type":"success"}],
	  "failure_examples":[{"response":"I do not know.","type":"failure"}]}`)
	refund := createTest(t, s, `{"type":"llm","name":"Refund promise",
	  "chat_history":[{"role":"user","message":"Will I get a refund for cancelled bookings?","time_in_call_secs":2}],
	  "success_examples":[{"response":"Yes, you will get a full refund right away.","type":"success"}],
	  "failure_examples":[{"response":"Refunds are never given for cancelled bookings.","type":"failure"}]}`)
	tool := createTest(t, s, `{"type":"tool","name":"Books a table",
	  "chat_history":[{"role":"user","message":"Please book a table for 4 guests, date friday","time_in_call_secs":1}],
	  "tool_call_parameters":{"referenced_tool":{"id":"book_table","type":"client"},
	    "parameters":[{"path":"guests","eval":{"type":"exact","expected_value":"4"}},{"path":"date","eval":{"type":"regex","pattern":"^fri"}}]}}`)

	// Validation: bounds, types, unknown ids, each with its loc.
	many := strings.Repeat(`{"test_id":"`+hours+`"},`, 5001)
	cases := []struct{ body, loc string }{
		{`{}`, `["body","tests"]`},
		{`{"tests":[]}`, `["body","tests"]`},
		{`{"tests":[` + strings.TrimSuffix(many, ",") + `]}`, `["body","tests"]`},
		{`{"tests":[{"test_id":"` + hours + `"}],"repeat_count":0}`, `["body","repeat_count"]`},
		{`{"tests":[{"test_id":"` + hours + `"}],"repeat_count":51}`, `["body","repeat_count"]`},
		{`{"tests":[{"test_id":"` + hours + `"}],"repeat_count":"two"}`, `["body","repeat_count"]`},
		{`{"tests":[{"test_id":"` + hours + `"},{}]}`, `["body","tests",1,"test_id"]`},
		{`{"tests":[{"test_id":"` + hours + `"},{"test_id":"test_nope"}]}`, `["body","tests",1,"test_id"]`},
		{`{"tests":[{"test_id":"` + hours + `"}],"agent_config_override":{"platform_settings":{}}}`, `["body","agent_config_override","conversation_config"]`},
		{`{"tests":[{"test_id":"` + hours + `"}],"branch_id":"feature_x"}`, `["body","branch_id"]`},
		{`{"tests":[{"test_id":"` + hours + `"}],"agent_config_override":{"conversation_config":{},"platform_settings":{},"workflow":{"nodes":{}}}}`,
			`["body","agent_config_override","workflow"]`},
	}
	for _, c := range cases {
		r := call(t, s, "POST", "/v1/convai/agents/"+agent+"/run-tests", adminKey, c.body)
		if r.Code != 422 || !strings.Contains(string(r.Body), `"loc":`+c.loc) {
			t.Fatalf("body %.80s: got %d %s, want 422 at %s", c.body, r.Code, r.Body, c.loc)
		}
	}
	wantError(t, call(t, s, "POST", "/v1/convai/agents/agent_nope/run-tests", adminKey, `{"tests":[{"test_id":"`+hours+`"}]}`), 404, "agent_not_found")
	if r := call(t, s, "POST", "/v1/convai/agents/"+agent+"/run-tests", adminKey, `{"tests":[`); r.Code != 400 {
		t.Fatalf("malformed JSON: %d", r.Code)
	}

	// One run per test: passes and fails for the stated reasons.
	r := call(t, s, "POST", "/v1/convai/agents/"+agent+"/run-tests", adminKey,
		fmt.Sprintf(`{"tests":[{"test_id":%q},{"test_id":%q},{"test_id":%q,"workflow_node_id":"n1"}],"branch_id":"main"}`, hours, refund, tool))
	if r.Code != 200 {
		t.Fatalf("run-tests: %d %s", r.Code, r.Body)
	}
	var inv invocation
	_ = json.Unmarshal(r.Body, &inv)
	if len(inv.TestRuns) != 3 || inv.BucketingStatus != nil || inv.AgentID != agent {
		t.Fatalf("new invocation: %s", r.Body)
	}
	// Another workspace reaches neither the agent, nor its tests, nor the invocation.
	acme := createWorkspace(t, s, "Acme")
	wantError(t, call(t, s, "POST", "/v1/convai/agents/"+agent+"/run-tests", acme.APIKey, `{"tests":[{"test_id":"`+hours+`"}]}`), 404, "agent_not_found")
	wantError(t, call(t, s, "GET", "/v1/convai/test-invocations/"+inv.ID, acme.APIKey, ""), 404, "test_invocation_not_found")
	wantError(t, call(t, s, "POST", "/v1/convai/test-invocations/"+inv.ID+"/cancel", acme.APIKey, ""), 404, "test_invocation_not_found")
	wantError(t, call(t, s, "POST", "/v1/convai/test-invocations/"+inv.ID+"/resubmit", acme.APIKey,
		`{"test_run_ids":["`+inv.TestRuns[0].TestRunID+`"],"agent_id":"`+agent+`"}`), 404, "test_invocation_not_found")
	if r := call(t, s, "GET", "/v1/convai/test-invocations", acme.APIKey, ""); r.Code != 200 || strings.Contains(string(r.Body), inv.ID) {
		t.Fatalf("another workspace lists our invocation: %d %s", r.Code, r.Body)
	}
	for _, run := range inv.TestRuns {
		if run.Status != "pending" {
			t.Fatalf("a new run is %s", run.Status)
		}
	}
	awaitCompleted(t, s, inv.ID, 30*time.Second)
	got := getInvocation(t, s, inv.ID)
	byTest := map[string]int{}
	for i, run := range got.TestRuns {
		byTest[run.TestID] = i
		if run.Metadata["ran_by_user_email"] == "" || run.Metadata["workspace_id"] == "" || run.TestInfo["chat_history"] == nil {
			t.Fatalf("run fields: %+v", run)
		}
	}
	want := map[string]string{hours: "passed", refund: "failed", tool: "passed"}
	for id, status := range want {
		run := got.TestRuns[byTest[id]]
		if run.Status != status || run.ConditionResult.Rationale.Summary == "" || len(run.AgentResponses) != 1 {
			t.Fatalf("test %s: %s (%s), responses %v", id, run.Status, run.ConditionResult.Rationale.Summary, run.AgentResponses)
		}
	}
	if md := got.TestRuns[byTest[tool]].Metadata; md["test_type"] != "tool_call" {
		t.Fatalf("tool run metadata: %v", md)
	}

	// Repeats: bucketing groups runs of one test.
	r = call(t, s, "POST", "/v1/convai/agents/"+agent+"/run-tests", adminKey,
		fmt.Sprintf(`{"tests":[{"test_id":%q},{"test_id":%q}],"repeat_count":3}`, hours, refund))
	_ = json.Unmarshal(r.Body, &inv)
	if r.Code != 200 || inv.BucketingStatus == nil || *inv.BucketingStatus != "pending" || len(inv.TestRuns) != 6 {
		t.Fatalf("repeated: %d %s", r.Code, r.Body)
	}
	eventually(t, 30*time.Second, "bucketing completes", func() bool {
		b := getInvocation(t, s, inv.ID).BucketingStatus
		return b != nil && *b == "completed"
	})
	got = getInvocation(t, s, inv.ID)
	if len(got.ResultGroups) != 2 {
		t.Fatalf("result groups: %v", got.ResultGroups)
	}
	for _, g := range got.ResultGroups {
		buckets := g["buckets"].([]any)
		b := buckets[0].(map[string]any)
		if len(buckets) != 1 || len(b["test_run_ids"].([]any)) != 3 || b["title"] == "" || b["reason"] == "" {
			t.Fatalf("deterministic runs should share one bucket: %v", g)
		}
	}

	// Resubmit one run: a new attempt, then completed again.
	runID := got.TestRuns[0].TestRunID
	r = call(t, s, "POST", "/v1/convai/test-invocations/"+inv.ID+"/resubmit", adminKey,
		fmt.Sprintf(`{"test_run_ids":[%q],"agent_id":%q}`, runID, agent))
	if r.Code != 200 {
		t.Fatalf("resubmit: %d %s", r.Code, r.Body)
	}
	eventually(t, 30*time.Second, "resubmitted run finishes", func() bool {
		g := getInvocation(t, s, inv.ID)
		for _, run := range g.TestRuns {
			if run.TestRunID == runID {
				return run.Attempt == 2 && g.Status == "completed"
			}
		}
		return false
	})
	if r := call(t, s, "POST", "/v1/convai/test-invocations/"+inv.ID+"/resubmit", adminKey,
		fmt.Sprintf(`{"test_run_ids":["trun_x_1"],"agent_id":%q}`, agent)); r.Code != 422 {
		t.Fatalf("foreign run id: %d %s", r.Code, r.Body)
	}

	// Listing and cancel.
	r = call(t, s, "GET", "/v1/convai/test-invocations?agent_id="+agent+"&page_size=1", adminKey, "")
	list := r.JSON(t)
	if r.Code != 200 || len(list["results"].([]any)) != 1 || list["has_more"] != true {
		t.Fatalf("list: %d %s", r.Code, r.Body)
	}
	r = call(t, s, "GET", "/v1/convai/test-invocations?agent_id="+agent+"&page_size=1&cursor="+list["next_cursor"].(string), adminKey, "")
	if r.Code != 200 || len(r.JSON(t)["results"].([]any)) != 1 {
		t.Fatalf("page 2: %d %s", r.Code, r.Body)
	}
	// Filtered by a test: only the invocations that ran it.
	r = call(t, s, "GET", "/v1/convai/test-invocations?test_id="+tool, adminKey, "")
	if res := r.JSON(t)["results"].([]any); r.Code != 200 || len(res) != 1 || res[0].(map[string]any)["title"] != "3 tests" {
		t.Fatalf("listing by test: %d %s", r.Code, r.Body)
	}
	r = call(t, s, "GET", "/v1/convai/test-invocations?test_id=test_nope", adminKey, "")
	if res := r.JSON(t)["results"].([]any); r.Code != 200 || len(res) != 0 {
		t.Fatalf("listing by an unknown test: %d %s", r.Code, r.Body)
	}
	wantError(t, call(t, s, "GET", "/v1/convai/test-invocations/tinv_nope", adminKey, ""), 404, "test_invocation_not_found")
	wantError(t, call(t, s, "POST", "/v1/convai/test-invocations/"+inv.ID+"/cancel", adminKey, ""), 409, "invocation_finished")
}

func TestTestsAndFoldersThroughTheGateway(t *testing.T) {
	t.Parallel()
	s := startAdmin(t)
	// 422s for bad tests.
	for body, loc := range map[string]string{
		`{"name":"x"}`:                               `["body","type"]`,
		`{"type":"llm"}`:                             `["body","name"]`,
		`{"type":"quiz","name":"x"}`:                 `["body","type"]`,
		`{"type":"llm","name":"x"}`:                  `["body","success_condition"]`,
		`{"type":"llm","name":"x","chat_history":3}`: `["body","chat_history"]`,
		// White space only is no name, no condition and no example.
		`{"type":"llm","name":"   ","success_condition":"c"}`:                                                                   `["body","name"]`,
		`{"type":"llm","name":"x","success_condition":"   "}`:                                                                   `["body","success_condition"]`,
		`{"type":"llm","name":"x","success_examples":[{"response":" ","type":"success"}]}`:                                      `["body","success_examples",0,"response"]`,
		`{"type":"simulation","name":"x","success_conditions":["\t"]}`:                                                          `["body","success_conditions",0]`,
		`{"type":"llm","name":"x","success_condition":"c","chat_history":[{"role":"bot","time_in_call_secs":1}]}`:               `["body","chat_history",0,"role"]`,
		`{"type":"tool","name":"x","tool_call_parameters":{"parameters":[{"path":"a","eval":{"type":"regex","pattern":"("}}]}}`: `["body","tool_call_parameters","parameters",0,"eval","pattern"]`,
	} {
		r := call(t, s, "POST", "/v1/convai/agent-testing/create", adminKey, body)
		if r.Code != 422 || !strings.Contains(string(r.Body), `"loc":`+loc) {
			t.Fatalf("%s: got %d %s, want 422 at %s", body, r.Code, r.Body, loc)
		}
	}
	folder := postForID(t, s, adminKey, "/v1/convai/agent-testing/folders", `{"name":"Billing"}`, 200, "id")
	id := createTest(t, s, `{"type":"llm","name":"Greets","success_condition":"greets","parent_folder_id":"`+folder+`",
	  "dynamic_variables":{"customer":"Ann"}}`)
	other := createTest(t, s, `{"type":"llm","name":"Other","success_condition":"x"}`)

	r := call(t, s, "GET", "/v1/convai/agent-testing/"+id, adminKey, "")
	if g := r.JSON(t); r.Code != 200 || g["name"] != "Greets" || g["type"] != "llm" || g["success_condition"] != "greets" || g["parent_folder_id"] != folder {
		t.Fatalf("get: %d %s", r.Code, r.Body)
	}
	r = call(t, s, "PUT", "/v1/convai/agent-testing/"+id, adminKey, `{"type":"llm","name":"Greets warmly","success_condition":"greets warmly"}`)
	if r.Code != 200 || r.JSON(t)["name"] != "Greets warmly" {
		t.Fatalf("put: %d %s", r.Code, r.Body)
	}
	r = call(t, s, "PUT", "/v1/convai/agent-testing/"+id, adminKey, `{"type":"llm","name":"Greets warmly","success_condition":" "}`)
	if r.Code != 422 || !strings.Contains(string(r.Body), `"loc":["body","success_condition"]`) {
		t.Fatalf("put a blank condition: %d %s", r.Code, r.Body)
	}
	r = call(t, s, "GET", "/v1/convai/agent-testing?parent_folder_id="+folder, adminKey, "")
	if tests := r.JSON(t)["tests"].([]any); len(tests) != 1 || tests[0].(map[string]any)["id"] != id {
		t.Fatalf("list in folder: %s", r.Body)
	}
	r = call(t, s, "GET", "/v1/convai/agent-testing?types=folder&types=llm&sort_mode=folders_first", adminKey, "")
	if tests := r.JSON(t)["tests"].([]any); len(tests) != 3 || tests[0].(map[string]any)["entity_type"] != "folder" {
		t.Fatalf("folders first: %s", r.Body)
	}
	r = call(t, s, "GET", "/v1/convai/agent-testing?search=oth", adminKey, "")
	if tests := r.JSON(t)["tests"].([]any); len(tests) != 1 {
		t.Fatalf("search: %s", r.Body)
	}
	r = call(t, s, "POST", "/v1/convai/agent-testing/summaries", adminKey, `{"test_ids":["`+id+`","`+other+`"]}`)
	if r.Code != 200 || len(r.JSON(t)["tests"].(map[string]any)) != 2 {
		t.Fatalf("summaries: %d %s", r.Code, r.Body)
	}
	if r := call(t, s, "POST", "/v1/convai/agent-testing/summaries", adminKey, `{"test_ids":["test_nope"]}`); r.Code != 422 {
		t.Fatalf("unknown summary: %d", r.Code)
	}
	r = call(t, s, "POST", "/v1/convai/agent-testing/bulk-move", adminKey, `{"entity_ids":["`+other+`"],"move_to":"`+folder+`"}`)
	if r.Code != 200 {
		t.Fatalf("move: %d %s", r.Code, r.Body)
	}
	r = call(t, s, "GET", "/v1/convai/agent-testing/folders/"+folder, adminKey, "")
	if r.Code != 200 || r.JSON(t)["children_count"] != float64(2) {
		t.Fatalf("folder: %d %s", r.Code, r.Body)
	}
	r = call(t, s, "PATCH", "/v1/convai/agent-testing/folders/"+folder, adminKey, `{"name":"Payments"}`)
	if r.Code != 200 || r.JSON(t)["name"] != "Payments" {
		t.Fatalf("rename: %d %s", r.Code, r.Body)
	}
	wantError(t, call(t, s, "DELETE", "/v1/convai/agent-testing/folders/"+folder, adminKey, ""), 409, "folder_not_empty")
	if r := call(t, s, "DELETE", "/v1/convai/agent-testing/folders/"+folder+"?force=true", adminKey, ""); r.Code != 204 {
		t.Fatalf("force delete: %d %s", r.Code, r.Body)
	}
	wantError(t, call(t, s, "GET", "/v1/convai/agent-testing/"+id, adminKey, ""), 404, "test_not_found")
	r = call(t, s, "POST", "/v1/convai/agent-testing/create", adminKey, `{"type":"llm","name":"Short-lived","success_condition":"x"}`)
	if r.Code != 200 {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	gone := r.JSON(t)["id"].(string)
	if r := call(t, s, "DELETE", "/v1/convai/agent-testing/"+gone, adminKey, ""); r.Code != 200 {
		t.Fatalf("delete test: %d %s", r.Code, r.Body)
	}
	wantError(t, call(t, s, "GET", "/v1/convai/agent-testing/"+gone, adminKey, ""), 404, "test_not_found")

	// Another workspace sees none of it; a read-only key cannot write, but
	// reads summaries (a POST only for its body).
	mine := createTest(t, s, `{"type":"llm","name":"Mine","success_condition":"x"}`)
	acme := createWorkspace(t, s, "Acme")
	wantError(t, call(t, s, "GET", "/v1/convai/agent-testing/"+mine, acme.APIKey, ""), 404, "test_not_found")
	wantError(t, call(t, s, "PUT", "/v1/convai/agent-testing/"+mine, acme.APIKey, `{"type":"llm","name":"mine","success_condition":"x"}`), 404, "test_not_found")
	wantError(t, call(t, s, "DELETE", "/v1/convai/agent-testing/"+mine, acme.APIKey, ""), 404, "test_not_found")
	if r := call(t, s, "GET", "/v1/convai/agent-testing", acme.APIKey, ""); r.Code != 200 || strings.Contains(string(r.Body), mine) {
		t.Fatalf("anmine workspace lists our test: %d %s", r.Code, r.Body)
	}
	if r := call(t, s, "POST", "/v1/convai/agent-testing/summaries", acme.APIKey, `{"test_ids":["`+mine+`"]}`); r.Code != 422 {
		t.Fatalf("anmine workspace's summaries of our test: %d %s", r.Code, r.Body)
	}
	ro, _, _ := newKey(t, s, adminKey, `["convai_read"]`, "")
	wantError(t, call(t, s, "POST", "/v1/convai/agent-testing/create", ro, `{"type":"llm","name":"x","success_condition":"y"}`), 403, "missing_permission")
	if r := call(t, s, "POST", "/v1/convai/agent-testing/summaries", ro, `{"test_ids":["`+mine+`"]}`); r.Code != 200 {
		t.Fatalf("summaries with a read-only key: %d %s", r.Code, r.Body)
	}
}

// Cancel stops runs that have not started: with no runner working, every
// queued run is dropped from the work queue and shows cancelled.
func TestCancelStopsRunsNotStarted(t *testing.T) {
	t.Parallel()
	s := startAdmin(t, func(c *Config) { c.Runners = 0 })
	agent := agentWith(t, s)
	id := createTest(t, s, `{"type":"llm","name":"t","success_condition":"hours"}`)
	r := call(t, s, "POST", "/v1/convai/agents/"+agent+"/run-tests", adminKey, `{"tests":[{"test_id":"`+id+`"}],"repeat_count":5}`)
	var inv invocation
	if err := json.Unmarshal(r.Body, &inv); err != nil || r.Code != 200 {
		t.Fatalf("run-tests: %d %s", r.Code, r.Body)
	}
	js := testenv.JetStreamAt(t, s.NATSURL)
	queued := func() uint64 {
		st, err := js.Stream(context.Background(), "TESTJOBS")
		if err != nil {
			return 0
		}
		info, err := st.Info(context.Background())
		if err != nil {
			return 0
		}
		return info.State.Msgs
	}
	eventually(t, 10*time.Second, "runs queued", func() bool { return queued() == 5 })

	r = call(t, s, "POST", "/v1/convai/test-invocations/"+inv.ID+"/cancel", adminKey, "")
	if r.Code != 200 {
		t.Fatalf("cancel: %d %s", r.Code, r.Body)
	}
	if n := queued(); n != 0 {
		t.Fatalf("%d jobs still queued after cancel", n)
	}
	got := getInvocation(t, s, inv.ID)
	if !got.Cancelled || got.Status != "cancelled" || got.BucketingStatus == nil || *got.BucketingStatus != "failed" {
		t.Fatalf("cancelled invocation: %+v", got)
	}
	for _, run := range got.TestRuns {
		if run.Status != "cancelled" {
			t.Fatalf("run %s is %s", run.TestRunID, run.Status)
		}
	}
	if r := call(t, s, "POST", "/v1/convai/test-invocations/"+inv.ID+"/cancel", adminKey, ""); r.Code != 200 {
		t.Fatalf("cancel again: %d %s", r.Code, r.Body)
	}
	wantError(t, call(t, s, "POST", "/v1/convai/test-invocations/tinv_nope/cancel", adminKey, ""), 404, "test_invocation_not_found")

	// Resubmitting a run of the cancelled invocation queues it again.
	r = call(t, s, "POST", "/v1/convai/test-invocations/"+inv.ID+"/resubmit", adminKey,
		fmt.Sprintf(`{"test_run_ids":[%q],"agent_id":%q}`, got.TestRuns[0].TestRunID, agent))
	if r.Code != 200 {
		t.Fatalf("resubmit: %d %s", r.Code, r.Body)
	}
	eventually(t, 10*time.Second, "resubmitted run queued", func() bool { return queued() == 1 })
	g := getInvocation(t, s, inv.ID)
	if g.Status != "running" {
		t.Fatalf("after resubmit: %s", g.Status)
	}
	// Only the resubmitted run may still run; the others stay cancelled.
	for _, run := range g.TestRuns {
		want := "cancelled"
		if run.TestRunID == got.TestRuns[0].TestRunID {
			want = "pending"
		}
		if run.Status != want {
			t.Fatalf("after resubmitting one run, run %s is %s, want %s", run.TestRunID, run.Status, want)
		}
	}
	r = call(t, s, "GET", "/v1/convai/test-invocations?agent_id="+agent, adminKey, "")
	listed := r.JSON(t)["results"].([]any)[0].(map[string]any)
	if listed["pending_count"] != float64(1) || listed["cancelled_count"] != float64(4) {
		t.Fatalf("listing after resubmitting one run: %v", listed)
	}
}
