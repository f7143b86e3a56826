package stack

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/services/webhooks"
)

// The console in a real browser (e2e/browser): Debian's Chromium driven
// by playwright-core signs in, works the triage queue and a ticket, runs
// tests and manages webhooks and keys, with axe-core on every page.
// run.sh installs Chromium with apt-get when it is missing and it runs as
// root, and fails, never skips, when it cannot.
func TestConsoleInBrowser(t *testing.T) {
	t.Parallel()
	script := e2eSuite(t, "browser")
	// A webhook whose deliveries fail for good 3 times in a row is disabled
	// (the portal shows it).
	s := startAdmin(t, localHooks, func(c *Config) { c.WebhookAutoDisable = webhooks.AutoDisableEnv{Failures: 3} })
	agent := newAgent(t, s, adminKey, "Support bot")
	var convs []string
	for i := range 6 {
		conv := fmt.Sprintf("conv_browser_%d", i)
		publishConversation(t, s, "ws_default", "conversation_started", conv, agent, time.Now().Add(-time.Hour))
		convs = append(convs, conv)
	}
	// The first conversation ended, and its call stack handed its
	// transcript over; the ticket page shows it.
	ingest(t, s, adminKey, "conversation_ended", time.Now().Add(-59*time.Minute), map[string]any{"conversation_id": convs[0], "agent_id": agent,
		"call_successful": "failure", "transcript": []map[string]any{
			{"role": "user", "message": "Can I get a refund for last week?", "time_in_call_secs": 1},
			{"role": "agent", "message": "Yes, everything is refunded at once.", "time_in_call_secs": 4,
				"tool_calls":   []map[string]any{{"tool_name": "lookup_order", "params_as_json": `{"order":"A-17"}`, "request_id": "c1", "tool_has_been_called": true}},
				"tool_results": []map[string]any{{"tool_name": "lookup_order", "request_id": "c1", "result_value": `{"status":"shipped"}`, "is_error": false, "tool_has_been_called": true}}},
		}})
	eventually(t, 10*time.Second, "the agent's last call is listed", func() bool {
		agents, _ := call(t, s, "GET", "/v1/convai/agents", adminKey, "").JSON(t)["agents"].([]any)
		return len(agents) == 1 && agents[0].(map[string]any)["last_call_time_unix_secs"] != nil
	})
	eventually(t, 10*time.Second, "the transcript is kept", func() bool {
		return strings.Contains(string(call(t, s, "GET", "/v1/convai/conversations/"+convs[0], adminKey, "").Body), "refunded at once")
	})
	r := call(t, s, "POST", "/v1/workspace/invites/add", adminKey, `{"email":"ana@example.com","first_name":"Ana"}`)
	if r.Code != 200 {
		t.Fatalf("add member: %d %s", r.Code, r.Body)
	}
	member := r.JSON(t)["user_id"].(string)
	readOnly, _, _ := newKey(t, s, adminKey, `["convai_read"]`, "")
	// Tickets are raised on conversations the platform knows: wait until
	// the last one published is.
	eventually(t, 10*time.Second, "the conversations are known", func() bool {
		r := call(t, s, "POST", "/v1/convai/triage-tickets", adminKey, `{"conversation_id":"`+convs[5]+`","qa_comment":"sentinel"}`)
		return r.Code == 201 || r.Code == 200
	})

	artifacts := screenshotsDir(t)
	began := time.Now()
	t.Cleanup(func() { t.Logf("browser tier: %s; screenshots in %s", time.Since(began).Round(time.Second), artifacts) })
	runE2E(t, s, script, nil, "VOICEAI_E2E_AGENT_ID="+agent, "VOICEAI_E2E_CONVERSATIONS="+strings.Join(convs[:5], ","),
		"VOICEAI_E2E_READONLY_KEY="+readOnly, "VOICEAI_E2E_MEMBER_ID="+member, "VOICEAI_ARTIFACTS="+artifacts)
}
