package stack

import (
	"log/slog"
	"strings"
	"testing"
)

// Workspace secrets through the gateway, in the public shapes: the value
// goes in and never comes out, in no answer and no log line (debug
// included); an agent that uses a secret shows in its used_by and keeps it
// from deletion.
func TestWorkspaceSecretsThroughTheGateway(t *testing.T) {
	t.Parallel()
	s, logs := startLogging(t, slog.LevelDebug, localHooks)

	const value = "sk-gateway-secret-value-9d1e"
	var answers []string
	do := func(method, path, body string, want int) map[string]any {
		t.Helper()
		r := call(t, s, method, path, adminKey, body)
		answers = append(answers, string(r.Body))
		if r.Code != want {
			t.Fatalf("%s %s: %d %s", method, path, r.Code, r.Body)
		}
		if want == 204 {
			return nil
		}
		return r.JSON(t)
	}
	created := do("POST", "/v1/convai/secrets", `{"type":"new","name":"llm-key","value":"`+value+`"}`, 200)
	id := created["secret_id"].(string)
	agent := do("POST", "/v1/convai/agents/create", `{"name":"brain","conversation_config":{"agent":{"prompt":{"llm":"custom-llm",
		"custom_llm":{"url":"http://127.0.0.1:9/v1","api_key":{"secret_id":"`+id+`"}}}}}}`, 201)
	page := do("GET", "/v1/convai/secrets?page_size=1&dependency_limit=5", "", 200)
	if got := page["secrets"].([]any); len(got) != 1 || got[0].(map[string]any)["used_by"].(map[string]any)["agents"].([]any)[0].(map[string]any)["id"] != agent["agent_id"] {
		t.Fatalf("list: %v", page)
	}
	do("GET", "/v1/convai/secrets/"+id, "", 200)
	do("PATCH", "/v1/convai/secrets/"+id, `{"type":"update","name":"llm-key-2","value":"`+value+`-2"}`, 200)
	wantError(t, call(t, s, "DELETE", "/v1/convai/secrets/"+id, adminKey, ""), 409, "secret_in_use")
	do("DELETE", "/v1/convai/agents/"+agent["agent_id"].(string), "", 204)
	do("DELETE", "/v1/convai/secrets/"+id, "", 204)
	wantError(t, call(t, s, "GET", "/v1/convai/secrets/"+id, adminKey, ""), 404, "secret_not_found")

	for _, a := range answers {
		if strings.Contains(a, value) {
			t.Fatalf("an answer holds the secret: %s", a)
		}
	}
	if strings.Contains(logs.String(), value) {
		t.Fatal("a log line holds the secret")
	}
}
