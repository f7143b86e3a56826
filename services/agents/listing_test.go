package agents

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/runtime"
	"github.com/voiceai-platform/voiceai/pkg/runtime/runtimetest"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

// The agent and secret listings show a write as soon as it is answered
// and are the same after a restart, on either read index: rebuilt from
// the stream in memory mode, read from the durable copy in store mode.
func TestListingsReadTheirWritesAndSurviveARestart(t *testing.T) {
	runtimetest.OnEachReadIndex(t, testListings)
}

func testListings(t *testing.T, index string) {
	var js jetstream.JetStream
	start := runtimetest.Restarts(t, index, func(ctx context.Context, d runtime.Deps) (*Service, error) {
		js = d.JS
		return Start(ctx, d, testConfig)
	})
	svc, stop := start()
	defer func() { stop() }()
	admin := caller // binding a secret takes a workspace admin
	admin.Permissions = append([]string{"workspace_write"}, caller.Permissions...)
	do := func(svc *Service, method, path, body string) map[string]any {
		t.Helper()
		return runtimetest.Do(t, svc.Handler, admin, method, path, body)
	}
	secret := do(svc, http.MethodPost, "/v1/convai/secrets", `{"type":"new","name":"crm_token","value":"s3cret"}`)["secret_id"].(string)
	var ids []string
	for i := range 5 {
		body := fmt.Sprintf(`{"name":"Agent %d"}`, i)
		if i%2 == 0 {
			body = fmt.Sprintf(`{"name":"Agent %d","conversation_config":{"agent":{"prompt":{"prompt":"p","llm":"custom-llm",
				"custom_llm":{"url":"http://127.0.0.1:9/v1","model_id":"ft","api_key":{"secret_id":%q}}}}}}`, i, secret)
		}
		ids = append(ids, do(svc, http.MethodPost, "/v1/convai/agents/create", body)["agent_id"].(string))
	}
	do(svc, http.MethodPatch, "/v1/convai/agents/"+ids[3], `{"name":"Aardvark"}`)
	// A call of Agent 1, as the platform reports it.
	if _, err := js.Publish(context.Background(), "platform.evt.ws_a.call_started",
		fmt.Appendf(nil, `{"event":"call_started","timestamp":"2027-01-02T03:04:05Z","data":{"agent_id":%q}}`, ids[1])); err != nil {
		t.Fatal(err)
	}
	lastCall := func(svc *Service) any {
		for _, a := range do(svc, http.MethodGet, "/v1/convai/agents?search=agent%201", "")["agents"].([]any) {
			return a.(map[string]any)["last_call_time_unix_secs"]
		}
		return nil
	}
	called := float64(time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC).Unix())
	testkit.Eventually(t, 10*time.Second, "Agent 1's call listed", func() bool { return lastCall(svc) == called })
	do(svc, http.MethodDelete, "/v1/convai/agents/"+ids[4], "")

	names := func(svc *Service, query string) []string {
		var out []string
		for _, a := range do(svc, http.MethodGet, "/v1/convai/agents?"+query, "")["agents"].([]any) {
			out = append(out, a.(map[string]any)["name"].(string))
		}
		return out
	}
	using := func(svc *Service) []string {
		var out []string
		for _, u := range do(svc, http.MethodGet, "/v1/convai/secrets/"+secret, "")["used_by"].(map[string]any)["agents"].([]any) {
			out = append(out, u.(map[string]any)["id"].(string))
		}
		slices.Sort(out)
		return out
	}
	check := func(svc *Service, when string) {
		t.Helper()
		if got, want := names(svc, "sort_by=name"), []string{"Aardvark", "Agent 0", "Agent 1", "Agent 2"}; !slices.Equal(got, want) {
			t.Errorf("%s: by name %v; want %v", when, got, want)
		}
		if got, want := names(svc, "search=agent&page_size=2"), []string{"Agent 2", "Agent 1"}; !slices.Equal(got, want) {
			t.Errorf("%s: a search, newest first %v; want %v", when, got, want)
		}
		// The SDK's sort_by=call_count_7d lists in creation order.
		if got, want := names(svc, "sort_by=call_count_7d&page_size=3"), []string{"Aardvark", "Agent 2", "Agent 1"}; !slices.Equal(got, want) {
			t.Errorf("%s: by 7-day calls %v; want %v (newest first)", when, got, want)
		}
		if got, want := using(svc), []string{ids[0], ids[2]}; !slices.Equal(got, want) {
			t.Errorf("%s: agents using the secret %v; want %v", when, got, want)
		}
	}
	check(svc, "at once")
	stop()
	svc, stop = start()
	check(svc, "after a restart")
	if got := lastCall(svc); got != called {
		t.Errorf("after a restart: Agent 1's last call %v; want %v", got, called)
	}
}
