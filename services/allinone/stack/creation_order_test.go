package stack

import (
	"fmt"
	"net/url"
	"slices"
	"testing"
)

// Agents, tests and invocations made one after another, each under its own
// Idempotency-Key (a keyed create's id is a digest of its key, in no order
// of time), are listed newest first as they were made, page after page, on
// either read model; API keys oldest first. Within one second, by the
// nanosecond each was made: a millisecond holds several of these creates,
// and an unkeyed id is random within its millisecond.
func TestKeyedCreatesAreListedAsTheyWereMade(t *testing.T) {
	t.Parallel()
	onEachReadIndex(t, func(t *testing.T, s *Stack) {
		agents := make([]string, 4)
		for i := range agents {
			agents[i] = keyedCreate(t, s, "/v1/convai/agents/create", fmt.Sprintf("order-agent-%d", i), fmt.Sprintf(`{"name":"Desk %d"}`, i), "agent_id")
		}
		agent := agentWith(t, s)
		tests := make([]string, 4)
		for i := range tests {
			tests[i] = keyedCreate(t, s, "/v1/convai/agent-testing/create", fmt.Sprintf("order-test-%d", i),
				fmt.Sprintf(`{"type":"llm","name":"Hours %d","chat_history":[{"role":"user","message":"When are you open?","time_in_call_secs":1}],
				  "success_condition":"The agent states the opening hours"}`, i), "id")
		}
		invocations := make([]string, 4)
		for i := range invocations {
			invocations[i] = keyedCreate(t, s, "/v1/convai/agents/"+agent+"/run-tests", fmt.Sprintf("order-run-%d", i),
				fmt.Sprintf(`{"tests":[{"test_id":%q}]}`, tests[i]), "id")
		}
		agents = append(agents, agent)
		slices.Reverse(agents)
		slices.Reverse(tests)
		slices.Reverse(invocations)
		if listed := everyID(t, s, "/v1/convai/agents?page_size=4", "agents", "agent_id"); !slices.Equal(listed, agents) {
			t.Errorf("agents listed %v; want them newest first, %v", listed, agents)
		}
		if listed := everyID(t, s, "/v1/convai/agent-testing?page_size=4", "tests", "id"); !slices.Equal(listed, tests) {
			t.Errorf("tests listed %v; want them newest first, %v", listed, tests)
		}
		if listed := everyID(t, s, "/v1/convai/test-invocations?page_size=4&agent_id="+agent, "results", "id"); !slices.Equal(listed, invocations) {
			t.Errorf("invocations listed %v; want them newest first, %v", listed, invocations)
		}

		account := keyedCreate(t, s, "/v1/service-accounts", "order-account", `{"name":"ci"}`, "service-account-user-id")
		keysPath := "/v1/service-accounts/" + account + "/api-keys"
		keys := make([]string, 4)
		for i := range keys {
			keys[i] = keyedCreate(t, s, keysPath, fmt.Sprintf("order-key-%d", i), fmt.Sprintf(`{"name":"k%d","permissions":["convai_read"]}`, i), "key_id")
		}
		var listed []string
		for _, k := range call(t, s, "GET", keysPath, adminKey, "").JSON(t)["api-keys"].([]any) {
			listed = append(listed, k.(map[string]any)["key_id"].(string))
		}
		if !slices.Equal(listed, keys) {
			t.Errorf("keys listed %v; want them oldest first, %v", listed, keys)
		}
	})
}

// keyedCreate posts body to path under an Idempotency-Key and answers the
// id made, the answer's field idField.
func keyedCreate(t *testing.T, s *Stack, path, key, body, idField string) string {
	t.Helper()
	r := call(t, s, "POST", path, adminKey, body, "Idempotency-Key", key)
	if r.Code != 200 && r.Code != 201 {
		t.Fatalf("POST %s: %d %s", path, r.Code, r.Body)
	}
	return r.JSON(t)[idField].(string)
}

// everyID pages through the listing at path, its rows under field, and is
// the ids (each row's idField) of every page's rows in the order the pages
// gave them.
func everyID(t *testing.T, s *Stack, path, field, idField string) []string {
	t.Helper()
	var ids []string
	cursor := ""
	for pages := 0; pages < 100; pages++ {
		at := path
		if cursor != "" {
			at += "&cursor=" + url.QueryEscape(cursor)
		}
		r := call(t, s, "GET", at, adminKey, "")
		if r.Code != 200 {
			t.Fatalf("GET %s: %d %s", at, r.Code, r.Body)
		}
		page := r.JSON(t)
		for _, row := range page[field].([]any) {
			ids = append(ids, row.(map[string]any)[idField].(string))
		}
		if page["has_more"] != true {
			return ids
		}
		cursor = page["next_cursor"].(string)
	}
	t.Fatalf("GET %s: more than 100 pages", path)
	return nil
}
